import { createHash } from 'node:crypto';

/**
 * Where a user's clients hear of changes (docs/api.md, "The live inbox"): the
 * Event API's one channel namespace and, in it, one channel per user. AppSync
 * channel segments take only letters, digits and dashes, at most 50 of them,
 * and user ids take any Unicode, so the segment is a hash of the id: opaque,
 * fixed length, the same for every process that derives it. Knowing a
 * channel gives nothing: only a token of its user may subscribe to it
 * (shared/realtime/authorization.ts), and only the service publishes.
 */
export const REALTIME_NAMESPACE = 'inbox';

/** The WebSocket path of an Event API's real-time endpoint, and the path its HTTP endpoint publishes on. */
export const REALTIME_PATH = '/event/realtime';
export const PUBLISH_PATH = '/event';

/** 128 bits of SHA-256 in hex: no collision between users in any realistic population. */
const SEGMENT_HEX_CHARS = 32;

export function channelOf(userId: string): string {
  return `/${REALTIME_NAMESPACE}/u-${hashOf(userId)}`;
}

/** A large group's thread channel (docs/api.md, "Sharing", large groups): as opaque, and apart from every user's by its prefix. */
export function groupChannelOf(groupId: string): string {
  return `/${REALTIME_NAMESPACE}/g-${hashOf(groupId)}`;
}

const hashOf = (id: string): string => createHash('sha256').update(id, 'utf8').digest('hex').slice(0, SEGMENT_HEX_CHARS);

/** AppSync's rule for a channel path: a namespace and up to four more segments, each 1 to 50 letters, digits or dashes; `*` only last, when subscribing. */
const SEGMENT = /^[A-Za-z0-9-]{1,50}$/;
export const MAX_CHANNEL_SEGMENTS = 5;

export function isChannelPath(channel: unknown, { wildcard }: { wildcard: boolean }): channel is string {
  if (typeof channel !== 'string' || !channel.startsWith('/')) return false;
  const segments = channel.slice(1).split('/');
  if (segments.length > MAX_CHANNEL_SEGMENTS) return false;
  return segments.every(
    (segment, index) => SEGMENT.test(segment) || (wildcard && segment === '*' && index === segments.length - 1 && index > 0),
  );
}

/** Whether a subscription to `pattern` (a path, or one ending in `/*`) receives what is published to `channel`. */
export function channelMatches(pattern: string, channel: string): boolean {
  if (!pattern.endsWith('/*')) return pattern === channel;
  return channel.startsWith(pattern.slice(0, -1));
}

/** The namespace of a channel path: its first segment. */
export const namespaceOf = (channel: string): string => channel.split('/')[1] ?? '';
