import type { DynamoDBStreamEvent } from 'aws-lambda';
import { expect, it } from 'vitest';
import type { DiscardedBatch } from '../../infra/local/stream-poller.js';
import { eventually } from '../support/eventually.js';
import { keysOf, streamedTables } from '../support/streamed-tables.js';

/**
 * The local stream poller reads a stream as the stack's mapping is told to
 * (infra/declarations/function-settings.ts, StreamReading): from the newest record when its
 * starting position is LATEST, and, with a maximum record age, a record
 * older than that goes to the on-failure destination instead of being
 * retried, so the records behind a batch that keeps failing move on.
 */
const {
  names: { aging: agingTable, latest: latestTable },
  pollerOn,
  put,
} = streamedTables('aging', 'latest');

it('gives a record that keeps failing up once it is older than the maximum age, to the on-failure destination, and reads on behind it', async () => {
  const tries: string[][] = [];
  const handled: string[] = [];
  const discarded: DiscardedBatch[] = [];
  let poisonSequence: string | undefined;
  const poller = pollerOn(agingTable, {
    handler: async (event: DynamoDBStreamEvent) => {
      const keys = keysOf(event);
      tries.push(keys);
      const poison = event.Records.find((record) => record.dynamodb!.Keys!.pk!.S === 'poison');
      if (poison) {
        poisonSequence = poison.dynamodb!.SequenceNumber;
        throw new Error('this record always fails');
      }
      handled.push(...keys);
    },
    maxRecordAgeSeconds: 5,
    discarded: (batch) => discarded.push(batch),
  });
  try {
    await put(agingTable, 'poison');
    // Failing, and retried: what comes now waits behind it.
    await eventually(
      async () => tries.filter((keys) => keys.includes('poison')).length,
      (count) => count >= 2,
    );
    await put(agingTable, 'held');
    await eventually(
      async () => discarded.length,
      (count) => count > 0,
      30_000,
    );
    expect(discarded[0]).toMatchObject({ condition: 'RecordAgeExceeded', table: agingTable, startSequenceNumber: poisonSequence });
    await put(agingTable, 'after');
    // The shard is read in order: 'after' handed means the poison and whatever was held behind it are behind the poller.
    await eventually(
      async () => handled,
      (keys) => keys.includes('after'),
      30_000,
    );
  } finally {
    await poller.stop();
  }
  expect(handled).not.toContain('poison');
  expect(handled.at(-1)).toBe('after');
});

it('from LATEST, hands only what was written after it began reading, never what the stream held before', async () => {
  await put(latestTable, 'before');
  const handled: string[] = [];
  const poller = pollerOn(latestTable, {
    handler: async (event: DynamoDBStreamEvent) => {
      handled.push(...keysOf(event));
    },
    startingPosition: 'LATEST',
  });
  try {
    // Probes until one comes through: from then on the poller reads past 'before', which it can no longer hand.
    let probes = 0;
    await eventually(
      async () => {
        await put(latestTable, `probe-${probes++}`);
        return handled;
      },
      (keys) => keys.length > 0,
      30_000,
      250,
    );
  } finally {
    await poller.stop();
  }
  expect(handled.length).toBeGreaterThan(0);
  expect(handled).not.toContain('before');
  for (const key of handled) expect(key).toMatch(/^probe-\d+$/);
});
