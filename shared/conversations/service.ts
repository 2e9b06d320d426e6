import { resourceMissing } from '../http/errors.js';
import type { Page, PageRequest } from '../pagination.js';
import type {
  Conversation,
  ConversationChanges,
  ConversationFilter,
  ConversationStore,
  Counterpart,
  ListCost,
} from './model.js';

/** What the conversation endpoints do, whatever stores them. */
export class ConversationService {
  constructor(private readonly store: ConversationStore) {}

  createConversation(userId: string, counterpart: Counterpart) {
    return this.store.findOrCreate(userId, counterpart);
  }

  async getConversation(userId: string, id: string): Promise<Conversation> {
    return (await this.store.get(userId, id)) ?? notFound(id);
  }

  async updateConversation(userId: string, id: string, changes: ConversationChanges): Promise<Conversation> {
    return (await this.store.update(userId, id, changes)) ?? notFound(id);
  }

  /**
   * The conversation (and its uniqueness record) goes in one write, and the
   * answer comes; its attachments follow from the table's stream
   * (functions/cleanup.ts), a process that retries until it is done.
   */
  async deleteConversation(userId: string, id: string, requestId: string): Promise<void> {
    if (!(await this.store.remove(userId, id, requestId))) notFound(id);
  }

  listConversations(
    userId: string,
    filter: ConversationFilter,
    page: PageRequest,
  ): Promise<{ page: Page<Conversation>; cost: ListCost }> {
    return this.store.list(userId, filter, page);
  }
}

function notFound(id: string): never {
  throw resourceMissing('conversation', id);
}
