import type { Caller } from '../caller.js';
import { NotFound } from '../domain-errors.js';
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
  constructor(private readonly store: EventStore) {}

  /** Another user's event, or one past the retention, is not found. */
  async getEvent(caller: Caller, id: string): Promise<ApiEvent> {
    const stored = (await this.store.get(caller.userId, id)) ?? notFound(id);
    return shownTo(caller.groups, stored);
  }

  async listEvents(caller: Caller, type: TypeFilter | undefined, page: PageRequest): Promise<Page<ApiEvent>> {
    const { has_more, data } = (await this.store.list(caller.userId, type, page)).page;
    return { has_more, data: data.map((stored) => shownTo(caller.groups, stored)) };
  }
}

function notFound(id: string): never {
  throw new NotFound('event', id);
}
