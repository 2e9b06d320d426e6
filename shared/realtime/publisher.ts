import { setTimeout as sleep } from 'node:timers/promises';
import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';
import type { RealtimeConfig } from '../config.js';
import type { Credentials } from '../s3/signer.js';
import { signedPost } from '../signed-post.js';
import { PUBLISH_PATH } from './channel.js';
import type { ChannelHint } from './hint.js';

/** AppSync Events takes at most five events per publish request. */
export const MAX_EVENTS_PER_PUBLISH = 5;
/** Attempts of one publish request: a lost connection or a 5xx/429 is tried again before the batch fails. */
const ATTEMPTS = 3;
const FIRST_PAUSE_MS = 100;
const ATTEMPT_TIMEOUT_MS = 5_000;

export class PublishFailed extends Error {
  override readonly name = 'PublishFailed';
}

/** What the Event API answers a publish: which of the request's events it took, which not. */
interface PublishAnswer {
  successful?: { identifier: string; index: number }[];
  failed?: { identifier?: string; index: number; code?: number; message?: string }[];
}

/**
 * Publishes to the Event API over HTTP, signed with SigV4 (service
 * `appsync`) by the function's own credentials: the namespace publishes with
 * IAM only, and only the publisher's role holds appsync:EventPublish
 * (infra/declarations/permissions.ts). The local server checks the signature and the key
 * the same way (infra/local/realtime.ts).
 */
export class EventApiPublisher {
  private readonly endpoint: URL;
  private readonly signer: SignatureV4;

  constructor(realtime: RealtimeConfig, region: string, credentials: Credentials) {
    const scheme = realtime.url.startsWith('wss:') ? 'https' : 'http';
    this.endpoint = new URL(`${scheme}://${realtime.host}${PUBLISH_PATH}`);
    this.signer = new SignatureV4({ service: 'appsync', region, credentials, sha256: Sha256 });
  }

  /**
   * Every hint, in order per channel: hints of one channel go in requests of
   * at most five, one request after the other; channels in parallel. Any
   * event the API did not take fails the whole call, so the stream batch is
   * retried: a hint published twice is harmless (the client reads its feed
   * from where it was), a hint lost is not.
   */
  async publishAll(hints: readonly ChannelHint[]): Promise<number> {
    const byChannel = new Map<string, string[]>();
    for (const { channel, event } of hints) byChannel.set(channel, [...(byChannel.get(channel) ?? []), event]);
    await Promise.all(
      [...byChannel].map(async ([channel, events]) => {
        for (let start = 0; start < events.length; start += MAX_EVENTS_PER_PUBLISH) {
          await this.publish(channel, events.slice(start, start + MAX_EVENTS_PER_PUBLISH));
        }
      }),
    );
    return byChannel.size;
  }

  async publish(channel: string, events: readonly string[]): Promise<void> {
    const body = JSON.stringify({ channel, events });
    for (let attempt = 1; ; attempt += 1) {
      let failure: string;
      let retriable = true;
      try {
        const response = await this.send(body);
        const text = await response.text();
        if (response.ok) {
          const failed = (JSON.parse(text) as PublishAnswer).failed ?? [];
          if (failed.length === 0) return;
          throw new PublishFailed(
            `the Event API refused ${failed.length} of ${events.length} events on ${channel}: ${JSON.stringify(failed).slice(0, 300)}`,
          );
        }
        failure = `the Event API answered ${response.status}: ${text.slice(0, 300)}`;
        retriable = response.status >= 500 || response.status === 429;
      } catch (error) {
        if (error instanceof PublishFailed) throw error;
        failure = `publishing to the Event API failed: ${String((error as Error).cause ?? error)}`;
      }
      if (!retriable || attempt >= ATTEMPTS) throw new PublishFailed(failure);
      await sleep(FIRST_PAUSE_MS * 2 ** (attempt - 1));
    }
  }

  private send(body: string): Promise<Response> {
    return signedPost(this.signer, this.endpoint, { 'content-type': 'application/json' }, body, ATTEMPT_TIMEOUT_MS);
  }
}
