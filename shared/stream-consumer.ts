import type { DynamoDBStreamEvent } from 'aws-lambda';
import { lambdaApp, type App } from './app.js';
import { withinBudget, type InvocationTime } from './deadline.js';

/**
 * `time`: Lambda's context. Within its budget a stalled backend fails the
 * batch with an error before the function's timeout, so the batch is retried
 * (and bisected) as any failure, with a log line that says which call failed.
 */
export type StreamHandler = (event: DynamoDBStreamEvent, time?: InvocationTime) => Promise<void>;

/**
 * A stream-fed function's handler: on Lambda on the process's App; the local
 * stream poller runs it on the server's App (withApp).
 */
export function streamConsumer(consume: (event: DynamoDBStreamEvent, app: App) => Promise<void>): StreamHandler & { withApp(app: App): StreamHandler } {
  return Object.assign((event: DynamoDBStreamEvent, time?: InvocationTime) => withinBudget(time, () => consume(event, lambdaApp())), {
    withApp: (app: App) => (event: DynamoDBStreamEvent, time?: InvocationTime) => withinBudget(time, () => consume(event, app)),
  });
}
