import type { SQSBatchItemFailure, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { type Composition, lambdaComposition } from './app.js';
import { consumerBudgetFor, type InvocationTime, withinBudget } from './deadline.js';
import { logger, withLogKeys } from './observability.js';

export type QueueHandler = (event: SQSEvent, time?: InvocationTime) => Promise<SQSBatchResponse>;

/** What a consumer does with one message; a throw hands it back to the queue, which delivers it again. */
export type ConsumeMessage = (message: SQSRecord, composition: Composition) => Promise<void>;

/**
 * An SQS-fed function's handler: each message of the batch in turn, each
 * one's failure its own (the mapping's ReportBatchItemFailures): the queue
 * delivers again only the messages that failed, after their visibility
 * timeout, and moves one to its dead-letter queue after its last delivery.
 * On Lambda on the process's Composition; the local queue runs it on the server's
 * (withComposition). Every line of a message carries its id and delivery count.
 */
export function queueConsumer(
  name: string,
  consume: ConsumeMessage,
): QueueHandler & { withComposition(composition: Composition): QueueHandler } {
  const run = (event: SQSEvent, composition: Composition, time?: InvocationTime) =>
    withLogKeys({ function: name }, () =>
      withinBudget(
        time,
        async () => {
          const batchItemFailures: SQSBatchItemFailure[] = [];
          for (const message of event.Records) {
            const keys = { message_id: message.messageId, receive_count: message.attributes.ApproximateReceiveCount };
            try {
              await withLogKeys(keys, () => consume(message, composition));
            } catch (error) {
              withLogKeys(keys, () => logger.error('message failed; the queue delivers it again', { error }));
              batchItemFailures.push({ itemIdentifier: message.messageId });
            }
          }
          return { batchItemFailures };
        },
        consumerBudgetFor,
      ),
    );
  return Object.assign((event: SQSEvent, time?: InvocationTime) => run(event, lambdaComposition(), time), {
    withComposition: (composition: Composition) => (event: SQSEvent, time?: InvocationTime) => run(event, composition, time),
  });
}

/** Which delivery of its message this is (SQS counts from 1). */
export const deliveryOf = (message: SQSRecord): number => Number(message.attributes.ApproximateReceiveCount) || 1;
