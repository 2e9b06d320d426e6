import type { SqsQueue } from '../sqs.js';
import type { SettlingTimers } from './fan-out.js';
import { INDEX_SETTLE_SECONDS } from './large-threads.js';

/** Deliveries of a settling timer before its dead-letter queue (a backend failing each time). */
export const SETTLING_DELIVERIES = 5;

/** The settling function's timeout: one Query of the thread's unmarked sides and their few writes, far under it. */
export const SETTLING_TIMEOUT_SECONDS = 60;

/** How long a delivered timer stays invisible: six times the function's timeout, as SQS advises for a Lambda mapping. */
export const SETTLING_VISIBILITY_SECONDS = 6 * SETTLING_TIMEOUT_SECONDS;

/** Timers per invocation: one group's sweep each, so a failed one alone comes again. */
export const SETTLING_BATCH_SIZE = 1;

/**
 * The switch's settling timer as a delayed SQS message (docs/decisions.md,
 * "Large groups"): the fan-out sends it as a thread becomes large, SQS
 * delivers it INDEX_SETTLE_SECONDS later to the settling function
 * (functions/large-thread-settling.ts). A timer sent twice (a retried
 * switch) comes twice; the second finds the thread settled.
 */
export class SqsSettlingTimers implements SettlingTimers {
  constructor(private readonly queue: Pick<SqsQueue, 'send'>) {}

  start(groupId: string): Promise<void> {
    return this.queue.send([{ body: JSON.stringify({ group_id: groupId }), delaySeconds: INDEX_SETTLE_SECONDS }]);
  }
}

/** A settling timer's group, or undefined for anything else. */
export function settlingGroupOf(body: string): string | undefined {
  try {
    const { group_id } = JSON.parse(body) as { group_id?: unknown };
    return typeof group_id === 'string' && group_id.length > 0 ? group_id : undefined;
  } catch {
    return undefined;
  }
}
