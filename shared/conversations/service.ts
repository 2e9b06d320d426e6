import { resourceMissing } from '../http/errors.js';
import type { Page, PageRequest } from '../pagination.js';
import type {
  Conversation,
  ConversationChanges,
  ConversationDependent,
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

  /** The conversation, or undefined when the user has none by this id. */
  findConversation(userId: string, id: string): Promise<Conversation | undefined> {
    return this.store.get(userId, id);
  }

  async updateConversation(userId: string, id: string, changes: ConversationChanges): Promise<Conversation> {
    return (await this.store.update(userId, id, changes)) ?? notFound(id);
  }

  /**
   * What belongs to the conversation (the dependents the caller names:
   * attachments, later messages) goes first, the conversation last: if
   * anything fails midway the conversation is still there and a retried
   * DELETE finishes the job, and nothing is left pointing at a conversation
   * that no longer exists. The dependents are a parameter, not wiring, so
   * that only the delete function bundles what they need (the S3 client).
   */
  async deleteConversation(userId: string, id: string, dependents: readonly ConversationDependent[]): Promise<void> {
    await this.getConversation(userId, id);
    for (const dependent of dependents) await dependent.removeAllOf(userId, id);
    if (!(await this.store.remove(userId, id))) notFound(id);
  }

  listConversations(
    userId: string,
    filter: ConversationFilter,
    page: PageRequest,
  ): Promise<{ page: Page<Conversation>; cost: ListCost }> {
    return this.store.list(userId, filter, page);
  }

  /** Whether the user has this conversation, and if so, mark it active now. */
  markActive(userId: string, id: string, at: number): Promise<boolean> {
    return this.store.markActive(userId, id, at);
  }
}

function notFound(id: string): never {
  throw resourceMissing('conversation', id);
}
