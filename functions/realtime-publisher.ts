import type { DynamoDBStreamEvent } from 'aws-lambda';
import { type Composition, realtimePublisher } from '../shared/app.js';
import { logger } from '../shared/observability.js';
import { hintOfRecord } from '../shared/realtime/hint.js';
import { streamConsumer, type Unfinished } from '../shared/stream-consumer.js';

/**
 * Pushes one hint per new event item to its user's channel on the Event API
 * (shared/realtime/hint.ts: the event's id and type, never the resource),
 * fed by the events table's stream with the pipe's own filter (new event
 * items only). Every hint of the batch is built first, so a malformed item
 * fails the batch before anything is published; a publish that fails throws,
 * so the event source mapping retries the whole batch (bisecting it: hints are cheap to publish again, so it never answers a partial batch), then hands
 * it to the dead-letter queue and its alarm, as it does a hint over a minute
 * old (infra/declarations/function-settings.ts); the local stream poller retries until it
 * succeeds or the minute is up. A hint published again after a retry is harmless.
 */
async function push(event: DynamoDBStreamEvent, composition: Composition): Promise<Unfinished | undefined> {
  const hints = event.Records.map(hintOfRecord);
  if (hints.length === 0) return undefined;
  const channels = await composition.use(realtimePublisher).publishAll(hints);
  logger.info('hints pushed', { hints: hints.length, channels });
  return undefined;
}

export const handler = streamConsumer('RealtimePublisher', push);
