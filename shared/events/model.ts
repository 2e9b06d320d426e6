/** The types of event, as the API names them (docs/api.md, "Events"). */
export const EVENT_TYPES = [
  'conversation.created',
  'conversation.updated',
  'conversation.deleted',
  'attachment.created',
  'attachment.updated',
  'attachment.deleted',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** What an event is about: the resource's name before the dot of its types. */
export type EventResource = EventType extends `${infer Resource}.${string}` ? Resource : never;

/** What `data.object` of a `*.deleted` event is. */
export interface DeletedObject {
  id: string;
  deleted: true;
}

/**
 * `object`: the resource as the feed's user saw it right after the change
 * (without links); `previous_attributes` on `*.updated` only: the old values
 * of the fields that changed.
 */
export interface EventData {
  object: object;
  previous_attributes?: Record<string, unknown>;
}

/** An event exactly as the API shows it. */
export interface ApiEvent {
  id: string;
  type: EventType;
  created_at: number;
  data: EventData;
  /** The API request that caused it; null for a change that reached the user from another member or from the cleanup. */
  request_id: string | null;
}

/** An event as a change describes it, before the feed gives it its id and time. */
export type EventDraft = Omit<ApiEvent, 'id' | 'created_at'>;

/**
 * An event as the feed stores it: the event, and the group whose members
 * alone may read it (docs/api.md, "Who reads a group's events"): set on
 * what another member's change of a group's thread brought the user (the
 * fan-out's events), null on everything else (the user's own changes, a
 * direct thread's, and events stored before the group was recorded).
 */
export interface StoredEvent {
  event: ApiEvent;
  group: string | null;
}

/** What `data.object` of a redacted event is: nothing of the change but that it was redacted. */
export interface RedactedObject {
  redacted: true;
}

/**
 * The event as a reader whose token does not list its group sees it: its id,
 * type and time stay (they are its place in the feed, and what a push hint
 * carries), everything the change said goes.
 */
export const redactedEvent = ({ id, type, created_at }: ApiEvent): ApiEvent => ({
  id,
  type,
  created_at,
  data: { object: { redacted: true } satisfies RedactedObject },
  request_id: null,
});

/** The stored event as a reader with these groups may see it: whole for a member of its group (or when it has none), else redacted. */
export const shownTo = (groups: ReadonlySet<string>, { event, group }: StoredEvent): ApiEvent =>
  group === null || groups.has(group) ? event : redactedEvent(event);

/** The `type` filter of the list: one type, or every type of a resource (`attachment.*`). */
export type TypeFilter = { kind: 'exact'; type: EventType } | { kind: 'resource'; resource: EventResource };

/** What a type is about: `attachment` of `attachment.created`. */
export const resourceOf = (type: EventType): EventResource => type.slice(0, type.indexOf('.')) as EventResource;

/** Events stay in the feed this long (and GET of one answers 404 after). */
export const EVENT_RETENTION_SECONDS = 30 * 24 * 3600;

/** A resource's creation, as the user saw it right after. */
export const createdEvent = (resource: EventResource, object: object, requestId: string | null): EventDraft => ({
  type: `${resource}.created`,
  data: { object },
  request_id: requestId,
});

/**
 * A resource's change from `before` to `after` (the user's view of it each
 * time): no event when no field shows a change; else the new view and the
 * old values of the changed fields only.
 */
export function updatedEvents<T extends object>(resource: EventResource, before: T, after: T, requestId: string | null): EventDraft[] {
  const changed = Object.entries(before).filter(([field, value]) => !sameValue(value, (after as Record<string, unknown>)[field]));
  if (changed.length === 0) return [];
  return [
    { type: `${resource}.updated`, data: { object: after, previous_attributes: Object.fromEntries(changed) }, request_id: requestId },
  ];
}

/** Fields are plain data: an object field (an attachment's preview) is the same when its JSON is. */
const sameValue = (before: unknown, after: unknown): boolean =>
  Object.is(before, after) || (typeof before === 'object' && typeof after === 'object' && JSON.stringify(before) === JSON.stringify(after));

export const deletedEvent = (resource: EventResource, id: string, requestId: string | null): EventDraft => ({
  type: `${resource}.deleted`,
  data: { object: { id, deleted: true } satisfies DeletedObject },
  request_id: requestId,
});
