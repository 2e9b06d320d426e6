import { Duration, type RemovalPolicy } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { SETTLING_DELIVERIES, SETTLING_VISIBILITY_SECONDS } from '../../../shared/conversations/settling-timers.js';
import { deadLettersWithAlarm } from './dead-letters.js';

/**
 * The large threads' settling timers' queue (docs/decisions.md, "Large
 * groups"): the fan-out sends a thread's timer as it becomes large, delayed
 * INDEX_SETTLE_SECONDS; a timer the settling function fails is delivered
 * again after the visibility timeout, SETTLING_DELIVERIES times in all, then
 * waits in the dead-letter queue, whose first message fires the alarm.
 */
export function threadSettlingQueue(scope: Construct, removalPolicy: RemovalPolicy): { queue: Queue; deadLetters: Queue; alarm: Alarm } {
  const { deadLetters, alarm } = deadLettersWithAlarm(scope, 'ThreadSettling', {
    removalPolicy,
    alarmDescription:
      "A large thread's settling timer failed every delivery: a side the switch's sweep missed may miss the thread's activity. Redrive the dead-letter queue (to the settling timers' queue) after fixing the cause.",
  });
  const queue = new Queue(scope, 'ThreadSettlingQueue', {
    encryption: QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    visibilityTimeout: Duration.seconds(SETTLING_VISIBILITY_SECONDS),
    retentionPeriod: Duration.days(4),
    deadLetterQueue: { queue: deadLetters, maxReceiveCount: SETTLING_DELIVERIES },
    removalPolicy,
  });
  return { queue, deadLetters, alarm };
}
