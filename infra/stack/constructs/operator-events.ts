import { type RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import { EventBus } from 'aws-cdk-lib/aws-events';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { CfnPipe } from 'aws-cdk-lib/aws-pipes';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { BUS_DETAIL_TYPE, BUS_FILTER_PATTERN, BUS_SOURCE } from '../../../shared/events/bus.js';
import { deadLettersWithAlarm, STREAM_RETRY_ATTEMPTS } from './dead-letters.js';

/** How old a stream record may get before the pipe gives up on it: well inside the stream's 24 hours. */
export const MAX_RECORD_AGE_SECONDS = 6 * 3600;

export interface OperatorEventsProps {
  /** The events table; its stream (NEW_IMAGE) feeds the pipe. */
  events: Table;
  /** The pipe's enrichment (functions/event-detail.ts): a record's stored event as the entry's detail. */
  detail: IFunction;
  removalPolicy: RemovalPolicy;
}

/**
 * Every user's events on a custom event bus, for operators' rules
 * (docs/events-for-operators.md): an EventBridge Pipe reads the events
 * table's stream, keeps new event items (shared/events/bus.ts), has the
 * enrichment turn each into its detail and puts it on the bus with `source`
 * messaging-api and one constant `detail-type` (the event's type is
 * `detail.type`: see BUS_DETAIL_TYPE). No publisher of ours: the
 * pipe reads, retries, bisects and dead-letters as the cleanup's event source
 * mappings do, and the same alarm fires on the first dead letter.
 */
export class OperatorEvents extends Construct {
  readonly bus: EventBus;
  readonly pipe: CfnPipe;
  readonly role: Role;
  /** Batches the pipe could not deliver after its retries; the alarm fires on the first. */
  readonly deadLetters: Queue;
  readonly alarm: Alarm;

  constructor(scope: Construct, id: string, props: OperatorEventsProps) {
    super(scope, id);
    const { events, detail, removalPolicy } = props;
    const streamArn = events.tableStreamArn;
    if (!streamArn) throw new Error('The events table has no stream to feed the pipe (shared/dynamo/tables.ts)');

    this.bus = new EventBus(this, 'Bus', {
      description: "Every user's events of the messaging API (source messaging-api, the event type in detail.type)",
    });

    const failures = deadLettersWithAlarm(this, 'Pipe', {
      removalPolicy,
      alarmDescription:
        'A batch of the events pipe failed every retry: events did not reach the event bus. Redrive the dead-letter queue after fixing the cause (docs/deploying.md).',
    });
    this.deadLetters = failures.deadLetters;
    this.alarm = failures.alarm;
    const logs = new LogGroup(this, 'PipeLogs', { retention: RetentionDays.ONE_MONTH, removalPolicy });

    // Only what the pipe does: read the one stream, invoke the one enrichment, put on the one bus, dead-letter to the one queue.
    this.role = new Role(this, 'PipeRole', {
      assumedBy: new ServicePrincipal('pipes.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
    });
    this.role.addToPolicy(
      new PolicyStatement({
        actions: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'],
        resources: [streamArn],
      }),
    );
    this.role.addToPolicy(new PolicyStatement({ actions: ['dynamodb:ListStreams'], resources: ['*'] }));
    this.role.addToPolicy(new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [detail.functionArn] }));
    this.role.addToPolicy(new PolicyStatement({ actions: ['events:PutEvents'], resources: [this.bus.eventBusArn] }));
    this.role.addToPolicy(new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [this.deadLetters.queueArn] }));
    logs.grantWrite(this.role);
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'dynamodb:ListStreams supports no resource-level permissions; the stream itself is read through the events table stream ARN only.',
    });

    this.pipe = new CfnPipe(this, 'Pipe', {
      description: "The events table's new event items, as entries on the operators' event bus",
      roleArn: this.role.roleArn,
      source: streamArn,
      sourceParameters: {
        dynamoDbStreamParameters: {
          // From the oldest record kept (24 h): a pipe created or restarted late skips nothing.
          startingPosition: 'TRIM_HORIZON',
          // An event bus target takes at most 10 entries per call (PutEvents).
          batchSize: 10,
          maximumRetryAttempts: STREAM_RETRY_ATTEMPTS,
          // However the retries go (Pipes backs off on enrichment failures), a record is dead-lettered by 6 hours old,
          // with 18 hours left in the stream to read it again for a redrive (AWS's Pipes troubleshooting page advises this).
          maximumRecordAgeInSeconds: MAX_RECORD_AGE_SECONDS,
          onPartialBatchItemFailure: 'AUTOMATIC_BISECT',
          deadLetterConfig: { arn: this.deadLetters.queueArn },
        },
        filterCriteria: { filters: [{ pattern: JSON.stringify(BUS_FILTER_PATTERN) }] },
      },
      enrichment: detail.functionArn,
      target: this.bus.eventBusArn,
      targetParameters: {
        // No input template: the enrichment's output is the detail as it is (a template would have to re-quote it).
        // No dynamic path either: what one resolves against after an enrichment is not settled (BUS_DETAIL_TYPE).
        eventBridgeEventBusParameters: { source: BUS_SOURCE, detailType: BUS_DETAIL_TYPE },
      },
      logConfiguration: { level: 'ERROR', cloudwatchLogsLogDestination: { logGroupArn: logs.logGroupArn } },
    });
    this.pipe.node.addDependency(this.role);
  }
}
