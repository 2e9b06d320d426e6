import type { Caller } from '../caller.js';
import { NotFound } from '../domain-errors.js';
import { threadFeedKey } from '../dynamo/keys.js';
import type { Page, PageRequest } from '../pagination.js';
import { type ApiEvent, shownTo, type TypeFilter } from './model.js';
import type { EventStore } from './store.js';

/**
 * What the event endpoints do: a user's own feed, nobody else's, each event
 * as the groups of the reader's token let them see it (docs/api.md, "Who
 * reads a group's events"): an event of a group the token does not list
 * keeps its place and is redacted, so the feed still only grows at its head
 * and a page reads no more than it did.
 */
export class EventService {
  constructor(
    private readonly store: EventStore,
    private readonly threads: LargeThreadsOfCaller,
  ) {}

  /** Another user's event, or one past the retention, is not found. */
  async getEvent(caller: Caller, id: string): Promise<ApiEvent> {
    const stored = (await this.store.get(caller.userId, id)) ?? notFound(id);
    return shownTo(caller.groups, stored);
  }

  /**
   * The caller's feed; with `conversationId`, the thread feed of the large group that side is of (a
   * member's only), each attachment shown in the reader's side.
   */
  async listEvents(caller: Caller, type: TypeFilter | undefined, page: PageRequest, conversationId?: string): Promise<Page<ApiEvent>> {
    if (conversationId === undefined) {
      const { has_more, data } = (await this.store.list(caller.userId, type, page)).page;
      return { has_more, data: data.map((stored) => shownTo(caller.groups, stored)) };
    }
    const { groupId, sideId } = await this.threads.largeThreadOf(caller, conversationId);
    const { has_more, data } = (await this.store.list(threadFeedKey(groupId), type, page)).page;
    return { has_more, data: data.map(({ event }) => inSide(event, sideId)) };
  }
}

/** What the thread feed asks of the conversations: the large group a side of the caller's is of (ConversationService). */
export interface LargeThreadsOfCaller {
  largeThreadOf(caller: Caller, conversationId: string): Promise<{ groupId: string; sideId: string }>;
}

/** A thread event's attachment as the reader's GET shows it: in the reader's side. */
function inSide(event: ApiEvent, sideId: string): ApiEvent {
  const object = event.data.object as Record<string, unknown>;
  if (!('conversation_id' in object)) return event;
  return { ...event, data: { ...event.data, object: { ...object, conversation_id: sideId } } };
}

function notFound(id: string): never {
  throw new NotFound('event', id);
}
