import { eventGroupPrefix, eventKey, sequenceSort, threadFeedKey } from '../dynamo/keys.js';
import { eventIndexes } from '../dynamo/tables.js';
import { type ApiEvent, EVENT_RETENTION_SECONDS, resourceOf, type StoredEvent } from './model.js';

/**
 * The stored event item, in one place: the outbox writes it
 * (shared/events/outbox.ts), the feed reads it (store.ts), and the events
 * table's stream carries it to the operators' bus (bus.ts: the pipe's
 * enrichment and the local forwarder read the same attributes).
 */

/** The table's TTL attribute: when the event leaves the feed. */
export const EXPIRES_AT = 'expires_at';
/** Whose feed holds the event (absent from a thread's): the bus's detail carries it next to the event. */
export const USER_ATTRIBUTE = 'user_id';
/** The event exactly as the API shows it, as JSON text: served as it is, never rebuilt. */
export const EVENT_ATTRIBUTE = 'event';

/**
 * The group whose members alone read the event (StoredEvent): beside the
 * event, not in it, so the event stays exactly what the API shows a member
 * and what the operators' bus carries.
 */
export const GROUP_ATTRIBUTE = 'group_id';

/**
 * Whose feed an event is in: a user's (`group`: the group whose members alone read it, for what
 * another member's change of a group's thread brought them), or a large group's thread's.
 */
export type FeedOwner = { user: string; group: string | null } | { thread: string };

/** The partition of the owner's feed. */
export const feedKeyOf = (owner: FeedOwner): string => ('user' in owner ? owner.user : threadFeedKey(owner.thread));

/**
 * The item of the owner's event at `sequence`: its key, what the reads filter on, the user or the
 * thread's group (the bus carries either beside the event), and the event itself.
 */
export function eventItem(owner: FeedOwner, sequence: number, event: ApiEvent): Record<string, unknown> {
  const group = 'user' in owner ? owner.group : owner.thread;
  return {
    ...eventKey(feedKeyOf(owner), sequence),
    [eventIndexes.type.sortKey]: sequenceSort(eventGroupPrefix(event.type), sequence),
    [eventIndexes.resource.sortKey]: sequenceSort(eventGroupPrefix(resourceOf(event.type)), sequence),
    ...('user' in owner ? { [USER_ATTRIBUTE]: owner.user } : {}),
    id: event.id,
    type: event.type,
    created_at: event.created_at,
    [EXPIRES_AT]: event.created_at + EVENT_RETENTION_SECONDS,
    [EVENT_ATTRIBUTE]: JSON.stringify(event),
    ...(group === null ? {} : { [GROUP_ATTRIBUTE]: group }),
  };
}

/** The event a stored item holds, as the API shows it. */
export const eventOf = (item: Record<string, unknown>): ApiEvent => JSON.parse(item[EVENT_ATTRIBUTE] as string) as ApiEvent;

/** The event a stored item holds with the group it is private to (none on items written before groups were recorded). */
export const storedEventOf = (item: Record<string, unknown>): StoredEvent => ({
  event: eventOf(item),
  group: typeof item[GROUP_ATTRIBUTE] === 'string' ? item[GROUP_ATTRIBUTE] : null,
});
