import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { busEnvelope } from '../../shared/events/bus.js';
import { logger } from '../../shared/observability.js';

export interface EventsForwarderOptions {
  /** EVENTS_FORWARD_URL. */
  url: URL;
  region: string;
  account: string;
  /** The server stopping: a delivery waiting for its receiver gives up, and the batch with it. */
  signal: AbortSignal;
}

/** How long a failed delivery waits before it is tried again: doubling from the first to the last. */
const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 4_000;
/** A receiver that takes the request and never answers is a failed attempt, tried again. */
const ATTEMPT_TIMEOUT_MS = 10_000;

/**
 * What the operators' event bus delivers, on the local server: fed by the
 * events table's stream (the stream poller, as the pipe reads it), it POSTs
 * each new event item's entry in EventBridge's envelope (shared/events/bus.ts)
 * to EVENTS_FORWARD_URL, one at a time in stream order, and tries each again
 * until the receiver answers 2xx: a receiver that is down or failing holds
 * the feed back, it never loses an entry. An entry keeps its envelope id
 * across its attempts, so a receiver can tell a repeat (the poller reads from
 * the oldest record kept at every start: entries of the last 24 hours come
 * again after a restart, as EventBridge delivers at least once).
 */
export function eventsForwarder(options: EventsForwarderOptions): (event: DynamoDBStreamEvent) => Promise<void> {
  return async ({ Records }) => {
    // Every entry of the batch first: an item that cannot become one fails the batch before any is POSTed, so the
    // poller's retry of the batch repeats nothing a receiver already took.
    const envelopes = Records.map((record) =>
      busEnvelope(record, { id: randomUUID(), account: options.account, region: options.region, at: new Date() }),
    );
    for (const envelope of envelopes) await deliver(JSON.stringify(envelope), envelope.id, options);
  };
}

async function deliver(body: string, id: string, { url, signal }: EventsForwarderOptions): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    signal.throwIfAborted();
    let failure: string;
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        signal: AbortSignal.any([signal, AbortSignal.timeout(ATTEMPT_TIMEOUT_MS)]),
      });
      // The answer's body means nothing to EventBridge; read it so the connection is reused.
      await response.arrayBuffer().catch(() => undefined);
      if (response.ok) {
        if (attempt > 1) logger.info('event forwarded after retries', { envelope_id: id, attempts: attempt });
        return;
      }
      failure = `answered ${response.status}`;
    } catch (error) {
      signal.throwIfAborted();
      failure = String((error as Error).cause ?? error);
    }
    if (attempt === 1) logger.warn(`EVENTS_FORWARD_URL ${failure}; retrying until it answers 2xx`, { envelope_id: id, url: url.href });
    await sleep(Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(attempt - 1, 4)), undefined, { signal });
  }
}
