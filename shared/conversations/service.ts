import { resourceMissing } from '../http/errors.js';
import type { Page, PageRequest } from '../pagination.js';
import { systemClock, type Clock } from '../time.js';
import { requestedMute } from './mute.js';
import { requestedOpen } from './read-state.js';
import type {
  Conversation,
  ConversationChanges,
  ConversationFilter,
  ConversationStore,
  ConversationUpdate,
  Counterpart,
  ListCost,
} from './model.js';

/** What the conversation endpoints do, whatever stores them. */
export class ConversationService {
  constructor(
    private readonly store: ConversationStore,
    private readonly clock: Clock = systemClock,
  ) {}

  /** `seed`: an idempotent request's (see IdempotencyService.run); its retries create the same conversation, and answer 201 with it. */
  createConversation(userId: string, counterpart: Counterpart, seed?: string) {
    return this.store.findOrCreate(userId, counterpart, seed);
  }

  async getConversation(userId: string, id: string): Promise<Conversation> {
    return (await this.store.get(userId, id)) ?? notFound(id);
  }

  /** The conversation, or undefined when the user has none by this id. */
  findConversation(userId: string, id: string): Promise<Conversation | undefined> {
    return this.store.get(userId, id);
  }

  async updateConversation(userId: string, id: string, update: ConversationUpdate): Promise<Conversation> {
    return (await this.store.update(userId, id, changesAt(update, this.clock()))) ?? notFound(id);
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

/** The change a PUT asks for, judged at `now` (how far ahead an open may be, whether a mute's end has passed). */
export function changesAt(update: ConversationUpdate, now: number): ConversationChanges {
  const { is_muted, muted_until, last_opened_at, ...plain } = update;
  const mute = requestedMute(is_muted, muted_until, now);
  const opened = requestedOpen(last_opened_at, now);
  return { ...plain, ...(mute === undefined ? {} : { mute }), ...(opened === undefined ? {} : { last_opened_at: opened }) };
}

function notFound(id: string): never {
  throw resourceMissing('conversation', id);
}
