import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { type Composition, lambdaComposition } from './app.js';
import { consumerBudgetFor, type InvocationTime, withinBudget } from './deadline.js';
import { logger, withLogKeys } from './observability.js';

/**
 * `time`: Lambda's context. Within its budget (consumerBudgetFor) a stalled
 * backend fails the record it was at before the function's timeout. The
 * answer is a partial batch response (the mapping's ReportBatchItemFailures):
 * Lambda keeps the records before the first one not finished and retries
 * from it.
 */
export type StreamHandler = (event: DynamoDBStreamEvent, time?: InvocationTime) => Promise<DynamoDBBatchResponse>;

/** Where a consumer stopped: the first record (in the batch's order) it did not finish, and why. */
export interface Unfinished {
  record: DynamoDBRecord;
  error: unknown;
}

/** What a consumer does with a batch: undefined when it finished every record. */
export type Consume = (event: DynamoDBStreamEvent, composition: Composition) => Promise<Unfinished | undefined>;

/**
 * A stream-fed function's handler: on Lambda on the process's Composition; the local
 * stream poller runs it on the server's Composition (withComposition). `name` is the
 * function's (the stack's id for it): every line of a batch carries it and
 * the batch's record ids (eventID), and a batch that fails whole says why.
 */
export function streamConsumer(
  name: string,
  consume: Consume,
): StreamHandler & { withComposition(composition: Composition): StreamHandler } {
  const run = (event: DynamoDBStreamEvent, composition: Composition, time?: InvocationTime) =>
    withLogKeys({ function: name, event_ids: event.Records.map((record) => record.eventID) }, () =>
      withinBudget(time, async () => batchResponse(event, await consume(event, composition)), consumerBudgetFor).catch((error: unknown) => {
        logger.error('stream batch failed; it is retried whole', { error });
        throw error;
      }),
    );
  return Object.assign((event: DynamoDBStreamEvent, time?: InvocationTime) => run(event, lambdaComposition(), time), {
    withComposition: (composition: Composition) => (event: DynamoDBStreamEvent, time?: InvocationTime) => run(event, composition, time),
  });
}

/**
 * The answer for a batch stopped at `unfinished`: the record's sequence
 * number, so Lambda retries from it and keeps what came before. A batch
 * stopped at its first record kept nothing: the error is thrown, as a
 * failure of the whole batch, so that the mapping bisects it (a partial
 * response at the first record would retry the same batch whole every time,
 * and a record that always fails would never be set apart from the others).
 */
export function batchResponse(event: DynamoDBStreamEvent, unfinished: Unfinished | undefined): DynamoDBBatchResponse {
  if (!unfinished) return { batchItemFailures: [] };
  const { record, error } = unfinished;
  const sequenceNumber = record.dynamodb?.SequenceNumber;
  if (record === event.Records[0] || !sequenceNumber) throw error;
  logger.warn('stream batch stopped; the rest is retried from the record it stopped at', {
    error,
    event_id: record.eventID,
    sequence_number: sequenceNumber,
    records_finished: event.Records.indexOf(record),
    records: event.Records.length,
  });
  return { batchItemFailures: [{ itemIdentifier: sequenceNumber }] };
}

/**
 * Each record in the batch's order, until one fails: a consumer whose records
 * are independent work. A record's lines carry its own id and sequence number
 * in place of the batch's ids.
 */
export async function eachInOrder(
  records: readonly DynamoDBRecord[],
  handle: (record: DynamoDBRecord) => Promise<void>,
): Promise<Unfinished | undefined> {
  for (const record of records) {
    try {
      await withLogKeys(recordKeys(record), () => handle(record));
    } catch (error) {
      return { record, error };
    }
  }
  return undefined;
}

const recordKeys = (record: DynamoDBRecord) => ({
  event_ids: undefined,
  event_id: record.eventID,
  sequence_number: record.dynamodb?.SequenceNumber,
});
