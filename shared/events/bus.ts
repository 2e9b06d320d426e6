import type { DynamoDBRecord } from 'aws-lambda';
import { EVENT_SK_PREFIX } from '../dynamo/keys.js';
import { EVENT_ATTRIBUTE, GROUP_ATTRIBUTE, USER_ATTRIBUTE } from './item.js';

/**
 * What operators receive on the event bus (docs/events-for-operators.md): one
 * entry per event item added to the events table, defined once here for the
 * stack's pipe (infra/stack/constructs/operator-events.ts) and the local server's
 * forwarder (infra/local/events-forwarder.ts), so both deliver the same entry.
 */

/** `source` of every entry. */
export const BUS_SOURCE = 'messaging-api';

/**
 * The stream records that become entries: new event items. A user's counter
 * item (sk `head`) is written with every event and never reaches the bus, nor
 * do the fan-out's records of changes delivered (sk `r#…`). The pipe's
 * filter; the local stream poller applies the same pattern before the forwarder.
 */
export const BUS_FILTER_PATTERN = {
  eventName: ['INSERT'],
  dynamodb: { Keys: { sk: { S: [{ prefix: EVENT_SK_PREFIX }] } } },
} as const;

/**
 * An entry's detail: the event object as `GET /v1/events/:id` shows it, plus `user_id`; a large
 * group's thread event (docs/api.md, "Sharing", large groups) has `group_id` in its place.
 */
export type BusDetail = { id: string; type: string; [field: string]: unknown } & ({ user_id: string } | { group_id: string });

/**
 * `detail-type` of every entry, one constant: the pipe's target parameters
 * hold no dynamic path. AWS's Pipes documentation does not settle what a
 * dynamic path in target parameters resolves against once an enrichment
 * reshapes the record: "data from the event payload itself", which "can't
 * reference new or transformed values" (target parameters), while for
 * targets "the event payload is what is returned from the enrichment" (input
 * transformation). `$.type` is the event type in the enrichment's output and
 * nothing in the stream record, where an unresolved path fails the entry. So
 * the type is `detail.type`, which rules match (docs/events-for-operators.md).
 */
export const BUS_DETAIL_TYPE = 'Messaging API event';

export class MalformedEventItem extends Error {
  override readonly name = 'MalformedEventItem';
}

/**
 * The detail of a new event item's stream record. The event is stored as
 * JSON text, which a pipe's input template can only pass on as a string
 * (docs/decisions.md, "Events on the bus"), so the pipe's enrichment
 * (functions/event-detail.ts) and the local forwarder both parse it here.
 */
export function busDetail(record: DynamoDBRecord): BusDetail {
  const image = record.dynamodb?.NewImage;
  const stored = image?.[EVENT_ATTRIBUTE]?.S;
  const userId = image?.[USER_ATTRIBUTE]?.S;
  const groupId = image?.[GROUP_ATTRIBUTE]?.S;
  const item = JSON.stringify(record.dynamodb?.Keys ?? {});
  if (stored === undefined || (userId === undefined && groupId === undefined))
    throw new MalformedEventItem(`event item ${item} has no ${EVENT_ATTRIBUTE} or ${USER_ATTRIBUTE} (or ${GROUP_ATTRIBUTE}) string`);
  let event: unknown;
  try {
    event = JSON.parse(stored);
  } catch {
    throw new MalformedEventItem(`event item ${item}: ${EVENT_ATTRIBUTE} is not JSON`);
  }
  if (!isObject(event) || typeof event.id !== 'string' || typeof event.type !== 'string') {
    throw new MalformedEventItem(`event item ${item}: ${EVENT_ATTRIBUTE} is not an event object with an id and a type`);
  }
  const owner = userId === undefined ? { group_id: groupId as string } : { user_id: userId };
  return { ...event, id: event.id, type: event.type, ...owner };
}

/** An entry as EventBridge delivers it to a rule's target. */
export interface BusEnvelope {
  version: '0';
  id: string;
  'detail-type': string;
  source: string;
  account: string;
  time: string;
  region: string;
  resources: string[];
  detail: BusDetail;
}

/**
 * EventBridge's envelope of the entry a new event item's record becomes;
 * `id`, `account`, `region` and `time` are the bus's (EventBridge dates an
 * entry to the second, when it is put).
 */
export function busEnvelope(record: DynamoDBRecord, put: { id: string; account: string; region: string; at: Date }): BusEnvelope {
  const detail = busDetail(record);
  return {
    version: '0',
    id: put.id,
    'detail-type': BUS_DETAIL_TYPE,
    source: BUS_SOURCE,
    account: put.account,
    time: put.at.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: put.region,
    resources: [],
    detail,
  };
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
