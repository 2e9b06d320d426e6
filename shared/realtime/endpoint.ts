import type { Config } from '../config.js';
import { channelOf } from './channel.js';

/** What `GET /v1/realtime` answers: where to connect, the host to sign the connection with, and the user's own channel. */
export interface RealtimeEndpoint {
  url: string;
  host: string;
  channel: string;
}

export function realtimeEndpoint(config: Config, userId: string): RealtimeEndpoint {
  // The stack and the local server always set it; a function without it is a broken deployment (a 500).
  if (!config.realtime) throw new Error('REALTIME_URL and REALTIME_HOST are not set');
  return { url: config.realtime.url, host: config.realtime.host, channel: channelOf(userId) };
}
