import {
  DescribeTableCommand,
  DynamoDBClient,
  ResourceNotFoundException,
  type StreamSpecification,
  type TableDescription,
} from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  type GetRecordsCommandOutput,
  GetShardIteratorCommand,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { type InvocationTime, invocationTime } from '../../shared/deadline.js';
import type { TableDefinition } from '../../shared/dynamo/tables.js';
import { logger } from '../../shared/observability.js';
import { type FilterPattern, passes } from '../../shared/stream-records.js';

export interface StreamPollerOptions {
  endpoint: string;
  region: string;
  /** The poller's own calls (finding each table's stream: DescribeTable), which no function makes. */
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** The stream reads (DescribeStream, GetShardIterator, GetRecords): the reader's role, as the mapping reads with the function's. */
  streamCredentials?: { accessKeyId: string; secretAccessKey: string };
  /** Tables whose streams feed the handler, each with the stream its definition asks for. */
  tables: { name: string; stream: NonNullable<TableDefinition['stream']> }[];
  /** The filter pattern of the stack's event source mapping (or pipe): only the records it keeps reach the handler. */
  filter: FilterPattern;
  /**
   * The consuming function's handler, as Lambda would invoke it. What it
   * answers is read as a partial batch response, as the stack's mappings
   * read it (ReportBatchItemFailures).
   */
  handler: (event: DynamoDBStreamEvent, time: InvocationTime) => Promise<DynamoDBBatchResponse | undefined> | Promise<void>;
  /** The function's timeout: the handler's time budget is drawn from it (not enforced: a late batch is not cut). */
  functionTimeoutMs: number;
  /** Where the shards found at the first look at a table are read from (the mapping's StartingPosition); TRIM_HORIZON unless said. */
  startingPosition?: 'TRIM_HORIZON' | 'LATEST';
  /** The mapping's MaximumRecordAgeInSeconds: an older record is not handed to the handler but to `discarded`. None: never. */
  maxRecordAgeSeconds?: number;
  /** The mapping's on-failure destination: what was given up on. Without it, a warning says so. */
  discarded?: (batch: DiscardedBatch) => void;
}

/** What Lambda sends an on-failure destination about records it gave up on (its DDBStreamBatchInfo, in short). */
export interface DiscardedBatch {
  condition: 'RecordAgeExceeded';
  table: string;
  shardId: string;
  startSequenceNumber: string | undefined;
  endSequenceNumber: string | undefined;
  batchSize: number;
}

export interface StreamPoller {
  /**
   * Settles once the first pass over the tables is over: the shards found
   * then are placed at their starting position (LATEST: what is written from
   * now on is read), or the pass failed and is retried.
   */
  ready: Promise<void>;
  /**
   * Settles after a pass begun after the call found no record in any shard
   * (shards looked for again first) and no failed batch was left: the
   * handler finished everything written before the call. Stopping settles it.
   */
  caughtUp(): Promise<void>;
  stop(): Promise<void>;
}

/** How often an idle shard is read, and how long a failed batch waits before it is retried. */
const IDLE_MS = 100;
const RETRY_MS = 250;
const MAX_RETRY_MS = 4_000;
/** Lambda's default batch size for a DynamoDB event source mapping. */
const BATCH_SIZE = 100;

interface ShardState {
  table: string;
  streamArn: string;
  shardId: string;
  iterator?: string;
  /** The last record the handler finished (or the filter dropped): where to resume. */
  after?: string;
  /** Where to read from before any record: the mapping's starting position for the shards first found (until placed), else the start. */
  start: 'TRIM_HORIZON' | 'LATEST';
  /** When the poller first read each record of the last batch (ms), which a retry reads again: their age (createdAt). */
  firstRead: Map<string, number>;
  closed: boolean;
}

/**
 * What Lambda's event source mapping does for the stack, on the local
 * server, one poller per consuming function: reads the tables' streams (DescribeStream, GetShardIterator,
 * GetRecords against DynamoDB Local or any other DynamoDB), keeps the records the mapping's filter
 * keeps, and invokes the same handler module with the same
 * DynamoDBStreamEvent shape, one shard's batch at a time, in order. A batch
 * whose handler fails is handed again in halves; a partial batch response
 * keeps the records before the one it names and hands the rest again; what
 * still fails is retried from the last record finished until it succeeds, so
 * the cleanup and the fan-out always finish once the backend is back. Each
 * poller keeps its own place in each shard, as each mapping does.
 *
 * A table it cannot use (missing, without a stream, or with a stream that
 * lacks what the handler reads: tables someone else made) is named in one
 * warning and looked at again every second, so a stream turned on later is read.
 */
export function startStreamPoller(options: StreamPollerOptions): StreamPoller {
  return new EventSourcePoller(options).start();
}

/** The poller's state (its clients, its place in each shard, what it warned about) and its steps, one method each. */
class EventSourcePoller {
  private readonly dynamodb: DynamoDBClient;
  private readonly streams: DynamoDBStreamsClient;
  private readonly shards = new Map<string, ShardState>();
  /** The streams whose shards were found once: the starting position applies to those first found only. */
  private readonly readBefore = new Set<string>();
  /** Why each table's stream is not read, as last warned about. */
  private readonly unusable = new Map<string, string>();
  private readonly accepts: ReturnType<typeof passes>;
  private running = true;
  private wake: (() => void) | undefined;
  /** Passes begun so far, and those waiting for a clean pass begun after they asked (caughtUp). */
  private passes = 0;
  private catchingUp: { after: number; resolve: () => void }[] = [];

  constructor(private readonly options: StreamPollerOptions) {
    this.dynamodb = new DynamoDBClient({ endpoint: options.endpoint, region: options.region, credentials: options.credentials });
    const streamsAt = streamsEndpoint(options.endpoint);
    this.streams = new DynamoDBStreamsClient({
      ...(streamsAt ? { endpoint: streamsAt } : {}),
      region: options.region,
      credentials: options.streamCredentials ?? options.credentials,
    });
    this.accepts = passes(options.filter);
  }

  start(): StreamPoller {
    let firstPassOver: () => void = () => {};
    const ready = new Promise<void>((resolve) => {
      firstPassOver = resolve;
    });
    const loop = this.run(firstPassOver);
    return {
      ready,
      caughtUp: () => new Promise<void>((resolve) => this.catchingUp.push({ after: this.passes, resolve })),
      stop: async () => {
        this.running = false;
        this.wake?.();
        await loop;
        firstPassOver();
        this.caughtUpTo(Number.POSITIVE_INFINITY);
        this.dynamodb.destroy();
        this.streams.destroy();
      },
    };
  }

  /** Passes over the shards until stopped: idle, it waits; failed, it backs off and reads again from the last record handled. */
  private async run(firstPassOver: () => void): Promise<void> {
    let lastDiscovery = 0;
    let failures = 0;
    while (this.running) {
      const pass = this.passes++;
      if (pass === 1) firstPassOver();
      const awaited = this.catchingUp.length > 0;
      let busy = false;
      try {
        if (awaited || Date.now() - lastDiscovery > 1_000) {
          await this.discoverShards();
          lastDiscovery = Date.now();
        }
        for (const shard of this.shards.values()) {
          if (!shard.closed && this.running) busy = (await this.pollShard(shard)) || busy;
        }
      } catch (error) {
        // The batch is read again from the last record handled: a failed batch is retried, never skipped.
        for (const shard of this.shards.values()) shard.iterator = undefined;
        failures += 1;
        if (this.running && failures === 1) logger.warn('stream batch failed; retrying until it succeeds', { error });
        await this.pause(Math.min(MAX_RETRY_MS, RETRY_MS * 2 ** Math.min(failures - 1, 4)));
        continue;
      }
      failures = 0;
      if (!busy) this.caughtUpTo(pass);
      if (!busy && this.running) await this.pause(IDLE_MS);
    }
  }

  /** Settles those who asked before `pass` began. */
  private caughtUpTo(pass: number): void {
    const settled = this.catchingUp.filter((waiter) => waiter.after <= pass);
    this.catchingUp = this.catchingUp.filter((waiter) => waiter.after > pass);
    for (const waiter of settled) waiter.resolve();
  }

  /** Waits `ms`, or less when stopped. */
  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** A table whose stream cannot be read (any more): said once, and its shards forgotten. */
  private notRead(table: string, reason: string): void {
    for (const [id, shard] of this.shards) if (shard.table === table) this.shards.delete(id);
    if (this.unusable.get(table) === reason) return;
    this.unusable.set(table, reason);
    logger.warn(`stream of table ${table} not read: ${reason}`, { table });
  }

  private async discoverShards(): Promise<void> {
    for (const table of this.options.tables) {
      let description: TableDescription | undefined;
      try {
        description = (await this.dynamodb.send(new DescribeTableCommand({ TableName: table.name }))).Table;
      } catch (error) {
        if (!(error instanceof ResourceNotFoundException)) throw error;
        this.notRead(table.name, `no such table at ${this.options.endpoint}`);
        continue;
      }
      const reason = unusableStream(table.stream, description?.StreamSpecification);
      const streamArn = description?.LatestStreamArn;
      if (reason || !streamArn) {
        this.notRead(table.name, reason ?? 'DynamoDB names no stream of it');
        continue;
      }
      this.unusable.delete(table.name);
      const { StreamDescription } = await this.streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
      // As Lambda: the starting position places the mapping on the shards there when it is made; later ones are read whole.
      const start = this.readBefore.has(streamArn) ? 'TRIM_HORIZON' : (this.options.startingPosition ?? 'TRIM_HORIZON');
      this.readBefore.add(streamArn);
      for (const shard of StreamDescription?.Shards ?? []) {
        if (shard.ShardId && !this.shards.has(shard.ShardId))
          this.shards.set(shard.ShardId, {
            table: table.name,
            streamArn,
            shardId: shard.ShardId,
            start,
            firstRead: new Map(),
            closed: false,
          });
      }
    }
  }

  /**
   * As the mapping's BisectBatchOnFunctionError: a failed batch is handed
   * again in halves, each an invocation with a time budget of its own, so a
   * batch too large for one budget still gets through. With its
   * ReportBatchItemFailures: a partial batch response keeps the records
   * before the one it names (`finished`), and the batch is split there, the
   * rest handed again. A single record that fails, or a response naming the
   * batch's first, fails the batch, which is then retried from the last
   * record finished.
   */
  private async invokeBisecting(records: DynamoDBRecord[], finished: (record: DynamoDBRecord) => void): Promise<void> {
    let resumeAt: number | undefined;
    try {
      // A handler that answers nothing (void) answers as one that answers undefined: the whole batch succeeded.
      const response = (await this.options.handler({ Records: records }, invocationTime(this.options.functionTimeoutMs))) as
        | DynamoDBBatchResponse
        | undefined;
      resumeAt = checkpointOf(records, response);
    } catch (error) {
      if (records.length === 1 || !this.running) throw error;
      const half = Math.ceil(records.length / 2);
      await this.invokeBisecting(records.slice(0, half), finished);
      await this.invokeBisecting(records.slice(half), finished);
      return;
    }
    if (resumeAt === undefined) return finished(recordAt(records, records.length - 1));
    if (resumeAt > 0) finished(recordAt(records, resumeAt - 1));
    if (resumeAt === 0 || !this.running)
      throw new Error(`the handler reported record ${recordAt(records, resumeAt).dynamodb?.SequenceNumber} of ${records.length} failed`);
    await this.invokeBisecting(records.slice(resumeAt), finished);
  }

  /**
   * The records of a batch young enough to hand over, as the mapping's
   * MaximumRecordAgeInSeconds: the older ones (the first of the batch, the
   * stream being in order) go to the on-failure destination and count as
   * finished. A batch that keeps failing is read again on each retry, so its
   * records age out too, and the records behind them move on.
   */
  private withoutExpired(shard: ShardState, records: DynamoDBRecord[]): DynamoDBRecord[] {
    const { maxRecordAgeSeconds, discarded } = this.options;
    if (maxRecordAgeSeconds === undefined) return records;
    const now = Date.now();
    shard.firstRead = new Map(
      records.map(({ dynamodb }) => [dynamodb?.SequenceNumber ?? '', shard.firstRead.get(dynamodb?.SequenceNumber ?? '') ?? now]),
    );
    const oldest = now - maxRecordAgeSeconds * 1000;
    const expired = records.filter((record) => createdAt(record, shard.firstRead) < oldest);
    if (expired.length === 0) return records;
    const batch: DiscardedBatch = {
      condition: 'RecordAgeExceeded',
      table: shard.table,
      shardId: shard.shardId,
      startSequenceNumber: expired[0]?.dynamodb?.SequenceNumber,
      endSequenceNumber: expired.at(-1)?.dynamodb?.SequenceNumber,
      batchSize: expired.length,
    };
    if (discarded) discarded(batch);
    else logger.warn(`${expired.length} stream records older than ${maxRecordAgeSeconds} s discarded`, { ...batch });
    shard.after = batch.endSequenceNumber ?? shard.after;
    return records.filter((record) => !expired.includes(record));
  }

  /**
   * LATEST: every record the shard holds now is passed over, and reading
   * resumes after the last. Not with a LATEST iterator: DynamoDB Local's
   * skipped records written after it was taken (a fresh table's first events).
   */
  private async skipToEnd(shard: ShardState): Promise<void> {
    let iterator = await this.iteratorAt(shard, { ShardIteratorType: 'TRIM_HORIZON' });
    shard.iterator = iterator;
    while (iterator) {
      const { Records = [], NextShardIterator } = await this.streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1_000 }));
      shard.after = Records.at(-1)?.dynamodb?.SequenceNumber ?? shard.after;
      shard.iterator = NextShardIterator;
      iterator = Records.length > 0 ? NextShardIterator : undefined;
    }
    shard.start = 'TRIM_HORIZON';
  }

  private async iteratorAt(
    shard: ShardState,
    position: { ShardIteratorType: 'TRIM_HORIZON' } | { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER'; SequenceNumber: string },
  ): Promise<string | undefined> {
    const answer = await this.streams.send(
      new GetShardIteratorCommand({ StreamArn: shard.streamArn, ShardId: shard.shardId, ...position }),
    );
    return answer.ShardIterator;
  }

  /** Reads one batch of a shard and hands the records its filter keeps to the handler; whether it found records. */
  private async pollShard(shard: ShardState): Promise<boolean> {
    if (shard.start === 'LATEST') await this.skipToEnd(shard);
    shard.iterator ??= await this.iteratorAt(
      shard,
      shard.after ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: shard.after } : { ShardIteratorType: 'TRIM_HORIZON' },
    );
    if (!shard.iterator) {
      shard.closed = true;
      return false;
    }
    let batch: GetRecordsCommandOutput;
    try {
      batch = await this.streams.send(new GetRecordsCommand({ ShardIterator: shard.iterator, Limit: BATCH_SIZE }));
    } catch (error) {
      // An iterator expires after 15 minutes; a sequence number can fall out of the 24-hour window.
      const name = (error as Error).name;
      if (name !== 'ExpiredIteratorException' && name !== 'TrimmedDataAccessException') throw error;
      shard.iterator = undefined;
      if (name === 'TrimmedDataAccessException') shard.after = undefined;
      return true;
    }
    const { Records = [], NextShardIterator } = batch;
    const kept = Records.map((record) => lambdaRecord(record, shard.streamArn, this.options.region)).filter(this.accepts);
    const accepted = this.withoutExpired(shard, kept);
    if (accepted.length > 0) {
      await this.invokeBisecting(accepted, (record) => {
        shard.after = record.dynamodb?.SequenceNumber ?? shard.after;
      });
    }
    const last = Records.at(-1)?.dynamodb?.SequenceNumber;
    if (last) shard.after = last;
    shard.iterator = NextShardIterator;
    if (!NextShardIterator) shard.closed = true;
    return Records.length > 0;
  }
}

/**
 * Why a table's stream cannot feed a handler written for `wanted`, or
 * undefined when it can. Every view type carries the keys; only OLD_IMAGE and
 * NEW_AND_OLD_IMAGES carry a removed item, NEW_IMAGE and NEW_AND_OLD_IMAGES an added one.
 */
export function unusableStream(
  wanted: NonNullable<TableDefinition['stream']>,
  actual: StreamSpecification | undefined,
): string | undefined {
  if (!actual?.StreamEnabled) return `it has no stream (its definition asks for ${wanted}); what is removed there is not cleaned up`;
  if (wanted === 'OLD_IMAGE' && actual.StreamViewType !== 'OLD_IMAGE' && actual.StreamViewType !== 'NEW_AND_OLD_IMAGES') {
    return `its stream is ${actual.StreamViewType}, without the removed item the cleanup reads (${wanted}); what is removed there is not cleaned up`;
  }
  if (wanted === 'NEW_IMAGE' && actual.StreamViewType !== 'NEW_IMAGE' && actual.StreamViewType !== 'NEW_AND_OLD_IMAGES') {
    return `its stream is ${actual.StreamViewType}, without the added item the events forwarder and the real-time publisher read (${wanted}); new events are not forwarded or pushed`;
  }
  if (wanted === 'NEW_AND_OLD_IMAGES' && actual.StreamViewType !== 'NEW_AND_OLD_IMAGES') {
    return `its stream is ${actual.StreamViewType}, without the items the consumers read (${wanted}); what is added or removed there is not followed up`;
  }
  return undefined;
}

/**
 * When a record was written, at the latest (ms): DynamoDB rounds its
 * creation time down (AWS to the second, DynamoDB Local to the minute), so
 * the end of that minute, or when the poller first read it if earlier, which
 * for a poller keeping up is within a poll of its writing.
 */
function createdAt(record: DynamoDBRecord, firstRead: ReadonlyMap<string, number>): number {
  const rounded = record.dynamodb?.ApproximateCreationDateTime;
  const read = firstRead.get(record.dynamodb?.SequenceNumber ?? '') ?? Date.now();
  return rounded === undefined ? read : Math.min(read, (rounded + 60) * 1000);
}

/** The record at `index` of a batch the poller handed; past its end is a bug in the poller, not a record to skip. */
function recordAt(records: readonly DynamoDBRecord[], index: number): DynamoDBRecord {
  const record = records[index];
  if (!record) throw new Error(`no record ${index} in a batch of ${records.length}`);
  return record;
}

/**
 * Where a partial batch response says to resume, as Lambda reads it: the
 * record of the smallest sequence number named (its index in `records`), or
 * undefined when none is named (an answer without batchItemFailures, or an
 * empty list: the whole batch succeeded). An identifier that is empty, not a
 * string, or names no record of the batch fails the whole batch (thrown).
 */
export function checkpointOf(records: readonly DynamoDBRecord[], response: DynamoDBBatchResponse | undefined | null): number | undefined {
  const failures: unknown[] = response?.batchItemFailures ?? [];
  if (failures.length === 0) return undefined;
  let first: number | undefined;
  for (const failure of failures) {
    const identifier = (failure as { itemIdentifier?: unknown } | null)?.itemIdentifier;
    const index =
      typeof identifier === 'string' && identifier !== ''
        ? records.findIndex((record) => record.dynamodb?.SequenceNumber === identifier)
        : -1;
    if (index < 0) throw new Error(`partial batch response names no record of the batch: ${JSON.stringify(failure)}`);
    first = first === undefined ? index : Math.min(first, index);
  }
  return first;
}

/**
 * Where the Streams API of a DynamoDB endpoint is: DynamoDB Local (in a
 * container or not) answers both on one host; AWS has its own for streams
 * (streams.dynamodb.<region>.amazonaws.com), which the client finds from the
 * region when given none.
 */
export function streamsEndpoint(dynamodbEndpoint: string): string | undefined {
  const host = new URL(dynamodbEndpoint).hostname;
  return /(^|\.)(amazonaws\.com|amazonaws\.com\.cn|api\.aws)$/.test(host) ? undefined : dynamodbEndpoint;
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
      ...(dynamodb?.ApproximateCreationDateTime
        ? { ApproximateCreationDateTime: Math.floor(dynamodb.ApproximateCreationDateTime.getTime() / 1000) }
        : {}),
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
