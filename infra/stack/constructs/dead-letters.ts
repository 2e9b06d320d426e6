import { Duration, type RemovalPolicy, Validations } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

/** How often a stream reader retries a failing batch (bisecting it) before it dead-letters it. */
export const STREAM_RETRY_ATTEMPTS = 10;

/**
 * The dead-letter queue of a stream reader (an event source mapping, a pipe):
 * what failed every retry waits there 14 days for a redrive
 * (docs/deploying.md), and the alarm fires on its first message.
 * `${name}DeadLetters` and `${name}Failures` name them in the console.
 */
export function deadLettersWithAlarm(
  scope: Construct,
  name: string,
  props: { removalPolicy: RemovalPolicy; alarmDescription: string },
): { deadLetters: Queue; alarm: Alarm } {
  const deadLetters = new Queue(scope, `${name}DeadLetters`, {
    encryption: QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(14),
    removalPolicy: props.removalPolicy,
  });
  Validations.of(deadLetters).acknowledge({
    id: 'AwsSolutions-SQS3',
    reason: 'This queue is the dead-letter destination of a stream reader; it has no dead-letter queue of its own.',
  });
  const alarm = new Alarm(scope, `${name}Failures`, {
    alarmDescription: props.alarmDescription,
    metric: deadLetters.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1) }),
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: TreatMissingData.NOT_BREACHING,
  });
  return { deadLetters, alarm };
}

/**
 * A queue a function consumes (`queueId`), with its dead letters and alarm (`name`, as above): encrypted, TLS
 * only, kept 4 days; a message the consumer fails comes again after `visibilitySeconds`, `deliveries` times in
 * all, then waits in the dead-letter queue.
 */
export function consumedQueue(
  scope: Construct,
  name: string,
  queueId: string,
  props: { removalPolicy: RemovalPolicy; alarmDescription: string; visibilitySeconds: number; deliveries: number },
): { queue: Queue; deadLetters: Queue; alarm: Alarm } {
  const { deadLetters, alarm } = deadLettersWithAlarm(scope, name, props);
  const queue = new Queue(scope, queueId, {
    encryption: QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    visibilityTimeout: Duration.seconds(props.visibilitySeconds),
    retentionPeriod: Duration.days(4),
    deadLetterQueue: { queue: deadLetters, maxReceiveCount: props.deliveries },
    removalPolicy: props.removalPolicy,
  });
  return { queue, deadLetters, alarm };
}
