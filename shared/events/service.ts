import { resourceMissing } from '../http/errors.js';
import type { Page, PageRequest } from '../pagination.js';
import type { ApiEvent, TypeFilter } from './model.js';
import type { EventStore } from './store.js';

/** What the event endpoints do: a user's own feed, nobody else's. */
export class EventService {
  constructor(private readonly store: EventStore) {}

  /** Another user's event, or one past the retention, is not found. */
  async getEvent(userId: string, id: string): Promise<ApiEvent> {
    return (await this.store.get(userId, id)) ?? notFound(id);
  }

  async listEvents(userId: string, type: TypeFilter | undefined, page: PageRequest): Promise<Page<ApiEvent>> {
    return (await this.store.list(userId, type, page)).page;
  }
}

function notFound(id: string): never {
  throw resourceMissing('event', id);
}
