import type { Caller } from '../caller.js';
import { InvalidParameter, NotFound, ReferenceMissing } from '../domain-errors.js';
import type { Page, PageRequest } from '../pagination.js';
import { type Clock, systemClock } from '../time.js';
import { asMember, requireMember } from './membership.js';
import type {
  Conversation,
  ConversationChanges,
  ConversationFilter,
  ConversationStore,
  ConversationUpdate,
  Counterpart,
  ListCost,
  ListOrder,
} from './model.js';
import { requestedMute } from './mute.js';
import { requestedOpen } from './read-state.js';

/** What the conversation endpoints do, whatever stores them. */
export class ConversationService {
  constructor(
    private readonly store: ConversationStore,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * `seed`: an idempotent request's (see IdempotencyService.run); its retries create the same conversation, and answer 201 with it.
   * A group's conversation needs the group in the token (403 not_a_member, nothing written), even when the user already holds it.
   */
  async createConversation(caller: Caller, counterpart: Counterpart, seed: string | undefined) {
    if (counterpart.kind === 'group') requireMember(caller.groups, counterpart.id, 'group_id');
    return this.store.findOrCreate(caller.userId, counterpart, seed, caller.requestId);
  }

  async getConversation(caller: Caller, id: string): Promise<Conversation> {
    return (await this.store.shown(caller.userId, id, caller.groups)) ?? notFound(id);
  }

  /**
   * The caller's conversation `id` for adding to or reading its thread:
   * undefined when they have none; 403 not_a_member when it is a group's
   * that the token no longer lists.
   */
  async memberConversation(caller: Caller, id: string, param?: string): Promise<Conversation | undefined> {
    return asMember(caller, await this.store.get(caller.userId, id), param);
  }

  /**
   * The large group whose thread feed the caller's side `id` reads (docs/api.md, "Sharing", large groups):
   * 400 resource_missing for no side of theirs, 403 not_a_member without the group in the token,
   * 400 parameter_invalid for a side of no large group.
   */
  async largeThreadOf(caller: Caller, id: string): Promise<{ groupId: string; sideId: string }> {
    const side = await this.memberConversation(caller, id, 'conversation_id');
    if (!side) throw new ReferenceMissing('conversation_id', `No such conversation: ${id}`);
    if (side.group_id === null || !(await this.store.isLargeThread(side.group_id)))
      throw new InvalidParameter('conversation_id', 'conversation_id must be a side of a large group: other threads are in your own feed');
    return { groupId: side.group_id, sideId: side.id };
  }

  /** The id of the user's side of the thread with this contact or group, if they hold one. */
  sideOf(userId: string, counterpart: Counterpart): Promise<string | undefined> {
    return this.store.sideOf(userId, counterpart);
  }

  async updateConversation(caller: Caller, id: string, update: ConversationUpdate): Promise<Conversation> {
    const changes = changesAt(update, this.clock());
    return (await this.store.update(caller.userId, id, changes, caller.requestId, caller.groups)) ?? notFound(id);
  }

  /**
   * The conversation (and its uniqueness record) goes in one write, and the
   * answer comes; its attachments follow from the table's stream
   * (functions/cleanup.ts), a process that retries until it is done.
   */
  async deleteConversation(caller: Caller, id: string): Promise<void> {
    if (!(await this.store.remove(caller.userId, id, caller.requestId))) notFound(id);
  }

  listConversations(
    caller: Caller,
    filter: ConversationFilter,
    page: PageRequest,
    order: ListOrder = { by: 'created' },
  ): Promise<{ page: Page<Conversation>; cost: ListCost }> {
    return this.store.list(caller.userId, filter, page, order, caller.groups);
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
  throw new NotFound('conversation', id);
}
