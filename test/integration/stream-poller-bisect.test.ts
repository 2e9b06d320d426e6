import type { DynamoDBStreamEvent } from 'aws-lambda';
import { expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { keysOf, streamedTables } from '../support/streamed-tables.js';

/**
 * The local stream poller hands a failed batch again in halves, as the stack's
 * event source mapping does with BisectBatchOnFunctionError: a batch too large
 * for one invocation still gets through, record by record in stream order.
 * And it reads a partial batch response as the mapping does with
 * ReportBatchItemFailures: the records before the one named are kept, the
 * rest handed again.
 */
const {
  names: { bisect: table, resume: resumeTable },
  pollerOn,
  put,
} = streamedTables('bisect', 'resume');

it('hands a batch its handler cannot take whole again in halves, until every record went through once in order', async () => {
  const keys = Array.from({ length: 20 }, (_, index) => `item-${String(index).padStart(2, '0')}`);
  for (const pk of keys) await put(table, pk);
  const invocations: number[] = [];
  const handled: string[] = [];
  const poller = pollerOn(table, {
    // Stands for a batch whose work outlasts one invocation's time budget: more than 3 records fail.
    handler: async (event: DynamoDBStreamEvent) => {
      invocations.push(event.Records.length);
      if (event.Records.length > 3) throw new Error('batch too large for one invocation');
      handled.push(...keysOf(event));
    },
    functionTimeoutMs: 20_000,
  });
  try {
    await eventually(
      async () => handled.length,
      (count) => count >= keys.length,
    );
  } finally {
    await poller.stop();
  }
  expect(handled).toEqual(keys);
  // A batch larger than the handler takes was read and tried whole, then handed again in halves.
  expect(invocations[0]).toBeGreaterThan(3);
  expect(invocations.filter((size) => size <= 3).length).toBeGreaterThan(0);
});

it('resumes a batch from the record its handler names in a partial batch response, never handing the ones before again', async () => {
  const keys = Array.from({ length: 20 }, (_, index) => `item-${String(index).padStart(2, '0')}`);
  for (const pk of keys) await put(resumeTable, pk);
  const invocations: string[][] = [];
  const handled: string[] = [];
  const poller = pollerOn(resumeTable, {
    // Stops at item-07 (a partial response), then at the first record of what is handed again (a partial response
    // naming the batch's first record: the batch fails, and is read again after the last record kept).
    handler: async (event: DynamoDBStreamEvent) => {
      const batch = keysOf(event);
      invocations.push(batch);
      const stopAt = invocations.length === 1 ? batch.indexOf('item-07') : invocations.length === 2 ? 0 : -1;
      const done = stopAt < 0 ? batch : batch.slice(0, stopAt);
      handled.push(...done);
      return stopAt < 0
        ? { batchItemFailures: [] }
        : { batchItemFailures: [{ itemIdentifier: event.Records[stopAt]!.dynamodb!.SequenceNumber! }] };
    },
    functionTimeoutMs: 900_000,
  });
  try {
    await eventually(
      async () => handled.length,
      (count) => count >= keys.length,
    );
  } finally {
    await poller.stop();
  }
  // Each record handled once, in order: what came before the record named was never handed again.
  expect(handled).toEqual(keys);
  expect(invocations[0]).toEqual(keys);
  // The batch split at the record named: the rest handed again at once.
  expect(invocations[1]).toEqual(keys.slice(7));
  // Named again, now as the first of its batch: a failure, read again after the last record kept (item-06).
  expect(invocations[2]).toEqual(keys.slice(7));
  expect(invocations).toHaveLength(3);
});
