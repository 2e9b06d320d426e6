import type { EventBridgeEvent } from 'aws-lambda';
import { type Composition, lambdaComposition } from './app.js';
import { consumerBudgetFor, type InvocationTime, withinBudget } from './deadline.js';
import { withLogKeys } from './observability.js';

export type AnyEventBridgeEvent = EventBridgeEvent<string, unknown>;
export type EventTargetHandler = (event: AnyEventBridgeEvent, time?: InvocationTime) => Promise<void>;

/**
 * A function an EventBridge rule invokes (asynchronously): one event per
 * invocation; a throw makes Lambda invoke it again (twice), then hands the
 * event to the function's dead-letter queue. On Lambda on the process's
 * Composition; the local server runs it on its own (withComposition). Every
 * line carries the event's id.
 */
export function eventTarget(
  name: string,
  consume: (event: AnyEventBridgeEvent, composition: Composition) => Promise<void>,
): EventTargetHandler & { withComposition(composition: Composition): EventTargetHandler } {
  const run = (event: AnyEventBridgeEvent, composition: Composition, time?: InvocationTime) =>
    withLogKeys({ function: name, event_id: event?.id }, () => withinBudget(time, () => consume(event, composition), consumerBudgetFor));
  return Object.assign((event: AnyEventBridgeEvent, time?: InvocationTime) => run(event, lambdaComposition(), time), {
    withComposition: (composition: Composition) => (event: AnyEventBridgeEvent, time?: InvocationTime) => run(event, composition, time),
  });
}
