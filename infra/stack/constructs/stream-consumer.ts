import { Duration, type RemovalPolicy } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { FilterCriteria, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { FilterPattern } from '../../../shared/stream-records.js';
import type { StreamReading } from '../../declarations/function-settings.js';
import { deadLettersWithAlarm, STREAM_RETRY_ATTEMPTS } from './dead-letters.js';

export interface StreamFeed {
  tables: ITable[];
  /** The records it is given; the local stream poller applies the same filter. */
  filter: FilterPattern;
  /** Where its mappings start and how old a record may grow; the local stream poller reads the same declaration. */
  reading: StreamReading;
  removalPolicy: RemovalPolicy;
  /** What a batch that failed every retry leaves undone, for the alarm's text. */
  leftUndone: string;
}

/**
 * A function fed by DynamoDB streams: one event source mapping per table, all
 * with the same settings, the dead-letter queue of the batches that failed
 * every retry and the alarm on its first message. Not a Construct of its own:
 * its resources keep their ids in the given scope (`${name}DeadLetters`,
 * `${name}Failures`), so a deployed queue and its undelivered batches are kept.
 */
export class StreamConsumer {
  readonly deadLetters: Queue;
  readonly alarm: Alarm;

  constructor(
    scope: Construct,
    readonly name: string,
    readonly fn: NodejsFunction,
    feed: StreamFeed,
  ) {
    const alarmDescription = `${name}: a stream batch failed every retry, so ${feed.leftUndone}. Redrive ${name}DeadLetters once the cause is fixed.`;
    ({ deadLetters: this.deadLetters, alarm: this.alarm } = deadLettersWithAlarm(scope, name, {
      removalPolicy: feed.removalPolicy,
      alarmDescription,
    }));
    for (const table of feed.tables) fn.addEventSource(this.mappingOf(table, feed));
  }

  private mappingOf(table: ITable, { filter, reading }: StreamFeed): DynamoEventSource {
    return new DynamoEventSource(table, {
      startingPosition: StartingPosition[reading.startingPosition],
      ...(reading.maxRecordAgeSeconds ? { maxRecordAge: Duration.seconds(reading.maxRecordAgeSeconds) } : {}),
      batchSize: 100,
      // A failing batch is split until the record that fails is alone; the others go through.
      bisectBatchOnError: true,
      // The consumer answers where it stopped (shared/stream-consumer.ts): a retry resumes there, the records before are kept.
      reportBatchItemFailures: true,
      retryAttempts: STREAM_RETRY_ATTEMPTS,
      onFailure: new SqsDlq(this.deadLetters),
      filters: [FilterCriteria.filter(filter as unknown as Record<string, unknown>)],
    });
  }
}
