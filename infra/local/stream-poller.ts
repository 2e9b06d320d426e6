import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { isRemoval } from '../../shared/cleanup/stream-events.js';
import { invocationTime, type InvocationTime } from '../../shared/deadline.js';
import { logger } from '../../shared/observability.js';

export interface StreamPollerOptions {
  endpoint: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** Tables whose streams feed the handler. */
  tables: string[];
  /** The cleanup function's handler, as Lambda would invoke it. */
  handler: (event: DynamoDBStreamEvent, time: InvocationTime) => Promise<void>;
  /** The function's timeout: the handler's time budget is drawn from it (not enforced: a late batch is not cut). */
  functionTimeoutMs: number;
}

/** How often an idle shard is read, and how long a failed batch waits before it is retried. */
const IDLE_MS = 100;
const RETRY_MS = 250;
const MAX_RETRY_MS = 4_000;
/** Lambda's default batch size for a DynamoDB event source mapping. */
const BATCH_SIZE = 100;

interface ShardState {
  streamArn: string;
  shardId: string;
  iterator?: string;
  /** The last record handed to the handler successfully: where to resume. */
  after?: string;
  closed: boolean;
}

/**
 * What Lambda's event source mapping does for the stack, on the local
 * server: reads the tables' streams (DescribeStream, GetShardIterator,
 * GetRecords against DynamoDB Local), keeps the records the mapping's filter
 * keeps (removals), and invokes the same handler module with the same
 * DynamoDBStreamEvent shape, one shard's batch at a time, in order. A batch
 * whose handler fails is retried (from the same place) until it succeeds, so
 * cleanup always finishes once the backend is back.
 */
export function startStreamPoller(options: StreamPollerOptions): { stop(): Promise<void> } {
  const dynamodb = new DynamoDBClient({ endpoint: options.endpoint, region: options.region, credentials: options.credentials });
  const streams = new DynamoDBStreamsClient({ endpoint: options.endpoint, region: options.region, credentials: options.credentials });
  const shards = new Map<string, ShardState>();
  let running = true;
  let wake: (() => void) | undefined;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  async function discoverShards(): Promise<void> {
    for (const table of options.tables) {
      const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: table }));
      const streamArn = Table?.LatestStreamArn;
      if (!streamArn) continue;
      const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
      for (const shard of StreamDescription?.Shards ?? []) {
        if (shard.ShardId && !shards.has(shard.ShardId)) shards.set(shard.ShardId, { streamArn, shardId: shard.ShardId, closed: false });
      }
    }
  }

  /** Reads one batch of a shard and hands its removals to the handler; whether it found records. */
  async function pollShard(shard: ShardState): Promise<boolean> {
    shard.iterator ??= (
      await streams.send(
        new GetShardIteratorCommand({
          StreamArn: shard.streamArn,
          ShardId: shard.shardId,
          ...(shard.after ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: shard.after } : { ShardIteratorType: 'TRIM_HORIZON' }),
        }),
      )
    ).ShardIterator;
    if (!shard.iterator) {
      shard.closed = true;
      return false;
    }
    let batch;
    try {
      batch = await streams.send(new GetRecordsCommand({ ShardIterator: shard.iterator, Limit: BATCH_SIZE }));
    } catch (error) {
      // An iterator expires after 15 minutes; a sequence number can fall out of the 24-hour window.
      const name = (error as Error).name;
      if (name !== 'ExpiredIteratorException' && name !== 'TrimmedDataAccessException') throw error;
      shard.iterator = undefined;
      if (name === 'TrimmedDataAccessException') shard.after = undefined;
      return true;
    }
    const { Records = [], NextShardIterator } = batch;
    const removals = Records.map((record) => lambdaRecord(record, shard.streamArn, options.region)).filter(isRemoval);
    if (removals.length > 0) await options.handler({ Records: removals }, invocationTime(options.functionTimeoutMs));
    const last = Records.at(-1)?.dynamodb?.SequenceNumber;
    if (last) shard.after = last;
    shard.iterator = NextShardIterator;
    if (!NextShardIterator) shard.closed = true;
    return Records.length > 0;
  }

  const loop = (async () => {
    let lastDiscovery = 0;
    let failures = 0;
    while (running) {
      let busy = false;
      try {
        if (Date.now() - lastDiscovery > 1_000) {
          await discoverShards();
          lastDiscovery = Date.now();
        }
        for (const shard of shards.values()) {
          if (!shard.closed && running) busy = (await pollShard(shard)) || busy;
        }
      } catch (error) {
        // The batch is read again from the last record handled: a failed cleanup is retried, never skipped.
        for (const shard of shards.values()) shard.iterator = undefined;
        failures += 1;
        if (running && failures === 1) logger.warn('stream batch failed; retrying until it succeeds', { error: String(error) });
        await pause(Math.min(MAX_RETRY_MS, RETRY_MS * 2 ** Math.min(failures - 1, 4)));
        continue;
      }
      failures = 0;
      if (!busy && running) await pause(IDLE_MS);
    }
  })();

  return {
    async stop() {
      running = false;
      wake?.();
      await loop;
      dynamodb.destroy();
      streams.destroy();
    },
  };
}

type Image = NonNullable<DynamoDBRecord['dynamodb']>['Keys'];

/** A stream record as Lambda delivers it: the same fields, creation time in seconds, the stream's ARN. */
function lambdaRecord(record: StreamRecord, streamArn: string, region: string): DynamoDBRecord {
  const { dynamodb } = record;
  return {
    eventID: record.eventID,
    eventName: record.eventName,
    eventVersion: record.eventVersion,
    eventSource: 'aws:dynamodb',
    awsRegion: record.awsRegion ?? region,
    eventSourceARN: streamArn,
    dynamodb: {
      ...(dynamodb?.ApproximateCreationDateTime ? { ApproximateCreationDateTime: Math.floor(dynamodb.ApproximateCreationDateTime.getTime() / 1000) } : {}),
      Keys: dynamodb?.Keys as Image,
      // What the table's StreamViewType adds (OLD_IMAGE: the removed item), as Lambda passes it on.
      ...(dynamodb?.OldImage ? { OldImage: dynamodb.OldImage as Image } : {}),
      ...(dynamodb?.NewImage ? { NewImage: dynamodb.NewImage as Image } : {}),
      SequenceNumber: dynamodb?.SequenceNumber,
      SizeBytes: dynamodb?.SizeBytes,
      StreamViewType: dynamodb?.StreamViewType,
    },
  };
}
