import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { checkpointOf } from '../../infra/local/stream-poller.js';
import { budgetFor, consumerBudgetFor } from '../../shared/deadline.js';
import { batchResponse, eachInOrder } from '../../shared/stream-consumer.js';

const record = (sequence: string): DynamoDBRecord => ({ eventID: `e${sequence}`, dynamodb: { SequenceNumber: sequence } });
const batch = ['100', '200', '300', '400'].map(record);

describe("a stream consumer's answer", () => {
  it('is an empty partial batch response when every record was finished', () => {
    expect(batchResponse({ Records: batch }, undefined)).toEqual({ batchItemFailures: [] });
  });

  it('names the sequence number of the first record not finished, so Lambda keeps the ones before', () => {
    expect(batchResponse({ Records: batch }, { record: batch[2]!, error: new Error('throttled') })).toEqual({
      batchItemFailures: [{ itemIdentifier: '300' }],
    });
  });

  it("throws when it stopped at the batch's first record, so the mapping bisects the batch rather than retry it whole", () => {
    const error = new Error('down');
    expect(() => batchResponse({ Records: batch }, { record: batch[0]!, error })).toThrow(error);
  });

  it('goes record by record and stops at the first that fails', async () => {
    const handled: string[] = [];
    const error = new Error('no');
    const unfinished = await eachInOrder(batch, async (r) => {
      if (r.dynamodb!.SequenceNumber === '300') throw error;
      handled.push(r.dynamodb!.SequenceNumber!);
    });
    expect(handled).toEqual(['100', '200']);
    expect(unfinished).toEqual({ record: batch[2], error });
  });
});

describe('the local poller reading a partial batch response as Lambda does', () => {
  it('finds the whole batch done without failures, or with an empty list', () => {
    expect(checkpointOf(batch, undefined)).toBeUndefined();
    expect(checkpointOf(batch, { batchItemFailures: [] })).toBeUndefined();
  });

  it('resumes at the smallest sequence number named', () => {
    expect(checkpointOf(batch, { batchItemFailures: [{ itemIdentifier: '400' }, { itemIdentifier: '200' }] })).toBe(1);
  });

  it('fails the whole batch on an empty, missing or unknown identifier', () => {
    for (const failure of [{ itemIdentifier: '' }, {}, { itemIdentifier: '999' }, { id: '200' }]) {
      expect(() => checkpointOf(batch, { batchItemFailures: [failure as { itemIdentifier: string }] })).toThrow(/names no record/);
    }
  });
});

describe("a stream consumer's budget", () => {
  it('of a 900 s function: calls until 885 s, fallbacks until 890 s, as nobody waits on the answer', () => {
    expect(consumerBudgetFor(900_000, 1_000)).toEqual({ callsEndAt: 886_000, fallbacksEndAt: 891_000 });
  });

  it("of a short function keeps the API's shares", () => {
    expect(consumerBudgetFor(2_000, 0)).toEqual(budgetFor(2_000, 0));
  });
});
