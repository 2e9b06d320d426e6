import type { DynamoDBStreamEvent } from 'aws-lambda';
import { expect, it } from 'vitest';
import { keysOf, streamedTables } from '../support/streamed-tables.js';

/**
 * The local stream poller's caughtUp, which tests wait on before relying on what a consumer did: it
 * settles only once everything written before the call was handled, a batch that failed and waits
 * for its retry included.
 */
const {
  names: { caught_up: table },
  pollerOn,
  put,
} = streamedTables('caught_up');

it('settles caughtUp only after every record written before the call was handled, a failed batch retried included', async () => {
  const handled: string[] = [];
  let failuresLeft = 0;
  const poller = pollerOn(table, {
    // Fails its first three invocations (a batch, then the halves it is handed again in), as a consumer whose backend is down.
    handler: async (event: DynamoDBStreamEvent) => {
      if (failuresLeft > 0) {
        failuresLeft -= 1;
        throw new Error('backend down');
      }
      handled.push(...keysOf(event));
    },
  });
  try {
    await poller.ready;
    // Nothing written: it settles.
    await poller.caughtUp();
    expect(handled).toEqual([]);

    failuresLeft = 3;
    const keys = ['first', 'second', 'third'];
    for (const pk of keys) await put(table, pk);
    await poller.caughtUp();
    expect(failuresLeft).toBe(0);
    expect(handled).toEqual(keys);
  } finally {
    await poller.stop();
  }
});

it('settles a caughtUp still waiting when the poller stops', async () => {
  const poller = pollerOn(table, {
    handler: async () => {
      throw new Error('never handles anything');
    },
  });
  await poller.ready;
  await put(table, 'stuck');
  const caughtUp = poller.caughtUp();
  await poller.stop();
  await expect(caughtUp).resolves.toBeUndefined();
});
