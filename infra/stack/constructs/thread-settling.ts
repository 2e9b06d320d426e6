import type { RemovalPolicy } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { SETTLING_DELIVERIES, SETTLING_VISIBILITY_SECONDS } from '../../../shared/conversations/settling-timers.js';
import { consumedQueue } from './dead-letters.js';

/**
 * The large threads' settling timers' queue (docs/decisions.md, "Large
 * groups"): the fan-out sends a thread's timer as it becomes large, delayed
 * INDEX_SETTLE_SECONDS; a timer the settling function fails is delivered
 * again after the visibility timeout, SETTLING_DELIVERIES times in all, then
 * waits in the dead-letter queue, whose first message fires the alarm.
 */
export function threadSettlingQueue(scope: Construct, removalPolicy: RemovalPolicy): ReturnType<typeof consumedQueue> {
  return consumedQueue(scope, 'ThreadSettling', 'ThreadSettlingQueue', {
    removalPolicy,
    alarmDescription:
      "A large thread's settling timer failed every delivery: a side the switch's sweep missed may miss the thread's activity. Redrive the dead-letter queue (to the settling timers' queue) after fixing the cause.",
    visibilitySeconds: SETTLING_VISIBILITY_SECONDS,
    deliveries: SETTLING_DELIVERIES,
  });
}
