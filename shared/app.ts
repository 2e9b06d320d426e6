import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoAttachmentStore } from './attachments/dynamo-store.js';
import { AttachmentLeftovers } from './attachments/leftovers.js';
import { AttachmentService } from './attachments/service.js';
import { AttachmentUploads } from './attachments/uploads.js';
import { type Config, lambdaConfig } from './config.js';
import { DynamoConversationStore } from './conversations/dynamo-store.js';
import { FanOut } from './conversations/fan-out.js';
import { LargeThreads } from './conversations/large-threads.js';
import { ConversationReads } from './conversations/reads.js';
import { ConversationService } from './conversations/service.js';
import { SqsSettlingTimers } from './conversations/settling-timers.js';
import { SideDelivery } from './conversations/side-delivery.js';
import { ThreadFeedWriter } from './conversations/thread-feed.js';
import { createDynamoClient } from './dynamo/client.js';
import { Outbox } from './events/outbox.js';
import { EventService } from './events/service.js';
import { EventStore } from './events/store.js';
import { filesCredentials } from './files/credentials.js';
import { S3FileLinks } from './files/s3-file-links.js';
import { S3FileStore } from './files/s3-file-store.js';
import { DynamoIdempotencyStore } from './idempotency/dynamo-store.js';
import { IdempotencyService } from './idempotency/service.js';
import { PreviewWorker } from './previews/service.js';
import { EventApiPublisher } from './realtime/publisher.js';
import type { S3Bucket } from './s3/bucket.js';
import { createFilesBucket } from './s3/client.js';
import { S3Presigner } from './s3/presigner.js';
import type { Credentials } from './s3/signer.js';
import { DynamoScanStore } from './scanning/dynamo-store.js';
import { GuardDutyRescans } from './scanning/guardduty.js';
import { ScanRecorder } from './scanning/recorder.js';
import { SqsScanTimers } from './scanning/timers.js';
import { SqsQueue } from './sqs.js';
import { type Clock, systemClock } from './time.js';
import { DynamoSessionCompletion, DynamoUploadSessionStore, type SessionTables } from './uploads/dynamo-store.js';
import { SessionLeftovers } from './uploads/leftovers.js';
import { type SessionNeighbours, UploadSessionService } from './uploads/service.js';

/**
 * A part of the Composition: how it is built from the Composition's configuration, clock and
 * other parts. Each is built on first use (`composition.use(part)`) and kept for the
 * life of the Composition, so every adapter exists once per Composition.
 *
 * Parts are functions, not members of the Composition class: esbuild drops unused
 * functions but never unused class members, so a function bundles only the
 * parts it uses and what they build (a GET of a conversation neither builds
 * nor bundles the S3 calls).
 */
export type Part<T> = (composition: Composition) => T;

/**
 * The composition root: from one configuration, every client, store and
 * service the handlers call, each built once, in this module only.
 *
 * On Lambda there is one Composition per process (lambdaComposition(), from the function's
 * environment, kept across warm invocations); the local server builds one per
 * server from the settings it was given, and destroys it when it stops.
 */
export class Composition {
  private readonly built = new Map<Part<unknown>, unknown>();
  private readonly closers: (() => void)[] = [];

  /**
   * `clock`: "now" for every rule that depends on it (creation and upload
   * times, how far ahead an open may be, whether a mute has ended, whether an
   * upload session has expired). Lambda uses the system clock; the local
   * server takes one so tests move time.
   */
  constructor(
    readonly config: Config,
    readonly clock: Clock = systemClock,
  ) {}

  use<T>(part: Part<T>): T {
    if (!this.built.has(part)) this.built.set(part, part(this));
    return this.built.get(part) as T;
  }

  /** For a part that holds connections: `close` runs when the Composition is destroyed. */
  closing<T>(value: T, close: (value: T) => void): T {
    this.closers.push(() => close(value));
    return value;
  }

  /** Closes the clients' connections (the local server, when it stops). */
  destroy(): void {
    for (const close of this.closers.splice(0)) close();
    this.built.clear();
  }
}

let processComposition: Composition | undefined;

/** The Composition of a Lambda process: its configuration, read once. */
export function lambdaComposition(): Composition {
  processComposition ??= new Composition(lambdaConfig());
  return processComposition;
}

export const dynamo: Part<DynamoDBDocumentClient> = (composition) =>
  composition.closing(createDynamoClient(composition.config), (client) => client.destroy());

/** What S3 requests and URLs are signed with (shared/files/credentials.ts), resolved and cached once per Composition. */
export const credentials: Part<Credentials> = (composition) => filesCredentials(composition.config);

/**
 * Presigned S3 URLs of the files bucket (downloads, and the part uploads of
 * upload sessions), signed in the process without the S3 client
 * (shared/s3/presigner.ts).
 */
export const presigner: Part<S3Presigner> = (composition) => {
  const { region, filesBucket, s3Endpoint } = composition.config;
  return new S3Presigner({ region, bucket: filesBucket, endpoint: s3Endpoint, credentials: composition.use(credentials) });
};

/** Links to attachment files (file_url), signed by the presigner. */
export const fileLinks: Part<S3FileLinks> = (composition) =>
  new S3FileLinks(composition.use(presigner), composition.config.fileUrlTtlSeconds);

/** The S3 calls of the files bucket: only the functions that write, read or remove files use it. */
export const s3Bucket: Part<S3Bucket> = (composition) =>
  composition.closing(createFilesBucket(composition.config, composition.use(credentials)), (bucket) => bucket.destroy());

/** The files of attachments and upload sessions. */
export const fileStore: Part<S3FileStore> = (composition) => new S3FileStore(composition.use(s3Bucket), composition.use(presigner));

/** Users' feeds of events, appended to in the transactions of the changes they record. */
export const outbox: Part<Outbox> = (composition) => new Outbox(composition.use(dynamo), composition.config.eventsTable, composition.clock);

/** The event endpoints: a user's feed, read. */
export const events: Part<EventService> = (composition) =>
  new EventService(
    new EventStore(composition.use(dynamo), composition.config.eventsTable, composition.clock),
    composition.use(conversations),
  );

/** Group threads' records: which are large, and a large one's activity. */
export const largeThreads: Part<LargeThreads> = (composition) =>
  new LargeThreads(composition.use(dynamo), composition.config.conversationsTable);

/** One conversation and a user's side of a thread, read without the store: what attachments and upload sessions ask. */
export const conversationReads: Part<ConversationReads> = (composition) =>
  new ConversationReads(composition.use(dynamo), composition.config.conversationsTable, composition.clock);

export const conversationStore: Part<DynamoConversationStore> = (composition) =>
  new DynamoConversationStore(composition.use(dynamo), composition.config.conversationsTable, composition.use(outbox), composition.clock);

export const attachmentStore: Part<DynamoAttachmentStore> = (composition) =>
  new DynamoAttachmentStore(
    composition.use(dynamo),
    composition.config.attachmentsTable,
    composition.config.conversationsTable,
    composition.use(outbox),
  );

export const conversations: Part<ConversationService> = (composition) =>
  new ConversationService(composition.use(conversationStore), composition.clock);

/** The attachment functions that never touch the files (get, list, rename, delete): records and links, no S3 calls. */
export const attachments: Part<AttachmentService> = (composition) =>
  new AttachmentService(
    composition.use(attachmentStore),
    composition.use(fileLinks),
    composition.use(conversationReads),
    composition.config.scanning,
  );

/** The upload function: the attachment's file, then its record. */
export const attachmentUploads: Part<AttachmentUploads> = (composition) =>
  new AttachmentUploads(
    composition.use(attachmentStore),
    composition.use(attachments),
    composition.use(conversationReads),
    composition.use(fileStore),
    composition.config.scanning,
    composition.clock,
  );

/** For the cleanup function: a removed conversation's attachment records, and the files no record holds. */
export const attachmentLeftovers: Part<AttachmentLeftovers> = (composition) =>
  new AttachmentLeftovers(composition.use(attachmentStore), composition.use(fileStore));

/** The upload session service, for the upload-session functions. */
export const uploadSessions: Part<UploadSessionService> = (composition) => {
  const { fileUrlTtlSeconds, uploadSessionTtlSeconds } = composition.config;
  return new UploadSessionService(
    new DynamoUploadSessionStore(composition.use(dynamo), sessionTables(composition.config)),
    composition.use(fileStore),
    // A part URL lives as long as a file_url: minutes, asked for again when it lapses.
    { sessionTtlSeconds: uploadSessionTtlSeconds, partUrlTtlSeconds: fileUrlTtlSeconds, scanning: composition.config.scanning },
    composition.clock,
  );
};

/** What completing a session needs of the conversations and attachments (the complete function's alone). */
export const sessionNeighbours: Part<SessionNeighbours> = (composition) => ({
  memberConversation: (caller, id, param) => composition.use(conversationReads).memberConversation(caller, id, param),
  getAttachment: (caller, id) => composition.use(attachments).getAttachment(caller, id),
  relink: (record) => composition.use(attachments).relink(record),
  completion: new DynamoSessionCompletion(composition.use(dynamo), sessionTables(composition.config), composition.use(outbox)),
});

const sessionTables = ({ uploadSessionsTable, attachmentsTable, conversationsTable }: Config): SessionTables => ({
  sessions: uploadSessionsTable,
  attachments: attachmentsTable,
  conversations: conversationsTable,
});

/** For the cleanup function: the attachment records, consistently read, and the files bucket. */
export const sessionLeftovers: Part<SessionLeftovers> = (composition) =>
  new SessionLeftovers(composition.use(attachmentStore), composition.use(fileStore));

/**
 * For the fan-out function: the sides of a thread's other members, and their
 * feeds; and for the settling function, its settling sweep (which sends no timer).
 */
export const fanOut: Part<FanOut> = (composition) => {
  const sides = composition.use(conversationStore);
  const { conversationsTable, eventsTable, largeGroupSides, scanning } = composition.config;
  return new FanOut(
    sides,
    new SideDelivery(composition.use(dynamo), conversationsTable, eventsTable, sides, composition.use(outbox), composition.clock, scanning),
    {
      threads: composition.use(largeThreads),
      feeds: new ThreadFeedWriter(composition.use(dynamo), eventsTable, composition.use(outbox), composition.clock, scanning),
      largeGroupSides,
      clock: composition.clock,
      // Built at a thread's switch only: the settling function never sends one.
      settling: { start: (groupId) => composition.use(settlingTimers).start(groupId) },
    },
  );
};

/** For the fan-out: a thread that becomes large gets a timer, which comes back INDEX_SETTLE_SECONDS later to settle it. */
export const settlingTimers: Part<SqsSettlingTimers> = (composition) => {
  const { threadSettlingQueueUrl, region } = composition.config;
  if (!threadSettlingQueueUrl) throw new Error('THREAD_SETTLING_QUEUE_URL is not set: a large thread has no settling sweep');
  return new SqsSettlingTimers(new SqsQueue(threadSettlingQueueUrl, region, composition.use(credentials)));
};

export const idempotency: Part<IdempotencyService> = (composition) =>
  new IdempotencyService(new DynamoIdempotencyStore(composition.use(dynamo), composition.config.idempotencyTable));

/** For the real-time publisher: posts hints to the Event API, signed with the function's own credentials. */
export const realtimePublisher: Part<EventApiPublisher> = (composition) => {
  const { realtime, region } = composition.config;
  if (!realtime) throw new Error('REALTIME_URL and REALTIME_HOST are not set: the publisher has no Event API to post to');
  return new EventApiPublisher(realtime, region, composition.use(credentials));
};

/** For the fan-out: the preview worker's queue, fed with each new record whose preview is pending. */
export const previewQueue: Part<SqsQueue> = (composition) => {
  const { previewQueueUrl, region } = composition.config;
  if (!previewQueueUrl) throw new Error('PREVIEW_QUEUE_URL is not set: a pending preview has no worker to go to');
  return new SqsQueue(previewQueueUrl, region, composition.use(credentials));
};

/** For the fan-out: each new record pending its scan gets a timer, which comes back when its scan timeout is due. */
export const scanTimers: Part<SqsScanTimers> = (composition) => {
  const { scanTimerQueueUrl, region } = composition.config;
  if (!scanTimerQueueUrl) throw new Error('SCAN_TIMER_QUEUE_URL is not set: a pending scan has no timeout');
  return new SqsScanTimers(new SqsQueue(scanTimerQueueUrl, region, composition.use(credentials)), composition.clock);
};

/** For the preview worker: the records, and the files read and thumbnails written. */
export const previewWorker: Part<PreviewWorker> = (composition) =>
  new PreviewWorker(composition.use(attachmentStore), composition.use(fileStore), composition.config.previewMaxBytes);

/** Scan results on the attachments table: the recorder's, and the fan-out's for a record whose result came first. */
export const scanStore: Part<DynamoScanStore> = (composition) =>
  new DynamoScanStore(composition.use(dynamo), composition.config.attachmentsTable, composition.use(outbox), composition.clock);

/** For the scan recorder: GuardDuty's results on the records, a failed scan asked again once. */
export const scanRecorder: Part<ScanRecorder> = (composition) => {
  const { region, guardDutyEndpoint } = composition.config;
  return new ScanRecorder(composition.use(scanStore), new GuardDutyRescans(region, composition.use(credentials), guardDutyEndpoint));
};
