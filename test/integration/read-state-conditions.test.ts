import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dynamo as dynamoClient } from '../../shared/app.js';
import { type ReadStateWrite, readStateCases } from '../../shared/conversations/read-state.js';
import { isConditionFailed } from '../../shared/dynamo/errors.js';
import { startTestApi, type TestApi } from '../support/api.js';

// The read-state cases choose what to write from `holds` and make it safe with `condition`:
// the two must agree on every stored state, including times stored as NULL by older items.
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api?.close());

/** A stored time: absent, NULL (as items written before this change hold it), or a number. */
const stored = fc.oneof(
  fc.constant({ kind: 'absent' as const }),
  fc.constant({ kind: 'null' as const }),
  fc.integer({ min: 0, max: 6 }).map((at) => ({ kind: 'at' as const, at })),
);
const write: fc.Arbitrary<ReadStateWrite> = fc.oneof(
  fc.record({ kind: fc.constant('open' as const), at: fc.integer({ min: 0, max: 6 }) }),
  fc.record({ kind: fc.constant('activity' as const), at: fc.integer({ min: 0, max: 6 }) }),
  fc.constant({ kind: 'clear' as const }),
);

describe('read-state case conditions', () => {
  it('each case succeeds as a conditional write exactly when its holds() says so', async () => {
    const key = { pk: 'conditions_user', sk: 'conv_conditions' };
    await fc.assert(
      fc.asyncProperty(stored, stored, write, async (active, opened, change) => {
        const value = (time: typeof active) => (time.kind === 'at' ? time.at : time.kind === 'null' ? null : undefined);
        const item: Record<string, unknown> = { ...key };
        if (active.kind !== 'absent') item.last_active_at = value(active);
        if (opened.kind !== 'absent') item.last_opened_at = value(opened);
        const { config } = api.api.composition;
        const dynamo = api.api.composition.use(dynamoClient);
        await dynamo.send(new PutCommand({ TableName: config.conversationsTable, Item: item }));
        const times = { last_active_at: value(active) ?? null, last_opened_at: value(opened) ?? null };
        for (const candidate of readStateCases(change)) {
          let succeeded = true;
          try {
            await dynamo.send(
              new UpdateCommand({
                TableName: config.conversationsTable,
                Key: key,
                UpdateExpression: 'SET probe = :probe',
                ConditionExpression: `attribute_exists(pk) AND ${candidate.condition}`,
                ...(Object.keys(candidate.names).length > 0 ? { ExpressionAttributeNames: candidate.names } : {}),
                ExpressionAttributeValues: { ':probe': 1, ...candidate.values },
              }),
            );
          } catch (error) {
            if (!isConditionFailed(error)) throw error;
            succeeded = false;
          }
          expect(succeeded, `${candidate.condition} on ${JSON.stringify(item)}`).toBe(candidate.holds(times));
        }
      }),
      { numRuns: 150 },
    );
  });
});
