import type { Config } from '../config.js';
import { channelOf, groupChannelOf } from './channel.js';

/** What `GET /v1/realtime` answers: where to connect, the host to sign the connection with, and the user's own channel. */
export interface RealtimeEndpoint {
  url: string;
  host: string;
  channel: string;
  /** The thread channels of the large groups the token lists (docs/api.md, "Sharing", large groups). */
  group_channels: { group_id: string; channel: string }[];
}

export function realtimeEndpoint(config: Config, userId: string, largeGroups: readonly string[]): RealtimeEndpoint {
  // The stack and the local server always set it; a function without it is a broken deployment (a 500).
  if (!config.realtime) throw new Error('REALTIME_URL and REALTIME_HOST are not set');
  return {
    url: config.realtime.url,
    host: config.realtime.host,
    channel: channelOf(userId),
    group_channels: [...largeGroups].sort().map((groupId) => ({ group_id: groupId, channel: groupChannelOf(groupId) })),
  };
}
