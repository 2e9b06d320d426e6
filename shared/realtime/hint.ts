import type { DynamoDBRecord } from 'aws-lambda';
import { busDetail } from '../events/bus.js';
import { channelOf, groupChannelOf } from './channel.js';

/**
 * What a push says (docs/api.md, "The live inbox"): that the user's feed has
 * a new event, its id and its type, and nothing of the resource. This is the
 * one place that builds it. A hint reveals no more than the feed shows the
 * same user (the event's id and type are in `GET /v1/events`); whatever the
 * feed hides from a user (a former group member's redacted events) the hint
 * never carried, so the feed stays the one source of truth and of privacy.
 */
export interface FeedHint {
  type: 'feed';
  event_id: string;
  event_type: string;
}

export function feedHint(event: { id: string; type: string }): FeedHint {
  return { type: 'feed', event_id: event.id, event_type: event.type };
}

/** The same for a large group's thread feed, pushed once on the group's channel (docs/api.md, "Sharing", large groups). */
export interface ThreadHint {
  type: 'thread';
  group_id: string;
  event_id: string;
  event_type: string;
}

export function threadHint(groupId: string, event: { id: string; type: string }): ThreadHint {
  return { type: 'thread', group_id: groupId, event_id: event.id, event_type: event.type };
}

/** A hint on its way: the channel of the feed's user (or thread) and the hint as the event text published there. */
export interface ChannelHint {
  channel: string;
  event: string;
}

/**
 * The hint of a new event item's stream record (the records the events pipe
 * takes, shared/events/bus.ts): the item names its user and its event; a
 * malformed item throws (MalformedEventItem), so its batch is retried and
 * dead-lettered, never dropped unseen.
 */
export function hintOfRecord(record: DynamoDBRecord): ChannelHint {
  const detail = busDetail(record);
  if ('user_id' in detail && typeof detail.user_id === 'string')
    return { channel: channelOf(detail.user_id), event: JSON.stringify(feedHint(detail)) };
  const groupId = detail.group_id as string;
  return { channel: groupChannelOf(groupId), event: JSON.stringify(threadHint(groupId, detail)) };
}
