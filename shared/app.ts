import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoAttachmentStore } from './attachments/dynamo-store.js';
import { AttachmentLeftovers } from './attachments/leftovers.js';
import { AttachmentService } from './attachments/service.js';
import { AttachmentUploads } from './attachments/uploads.js';
import { type Config, lambdaConfig } from './config.js';
import { DynamoConversationStore } from './conversations/dynamo-store.js';
import { FanOut } from './conversations/fan-out.js';
import { ConversationService } from './conversations/service.js';
import { SideDelivery } from './conversations/side-delivery.js';
import { createDynamoClient } from './dynamo/client.js';
import { Outbox } from './events/outbox.js';
import { EventService } from './events/service.js';
import { EventStore } from './events/store.js';
import { filesCredentials } from './files/credentials.js';
import { S3FileLinks } from './files/s3-file-links.js';
import { S3FileStore } from './files/s3-file-store.js';
import { DynamoIdempotencyStore } from './idempotency/dynamo-store.js';
import { IdempotencyService } from './idempotency/service.js';
import { SqsPreviewQueue } from './previews/queue.js';
import { PreviewWorker } from './previews/service.js';
import { EventApiPublisher } from './realtime/publisher.js';
import type { S3Bucket } from './s3/bucket.js';
import { createFilesBucket } from './s3/client.js';
import { S3Presigner } from './s3/presigner.js';
import type { Credentials } from './s3/signer.js';
import { DynamoScanStore } from './scanning/dynamo-store.js';
import { GuardDutyRescans } from './scanning/guardduty.js';
import { ScanRecorder } from './scanning/recorder.js';
import { type Clock, systemClock } from './time.js';
import { DynamoUploadSessionStore } from './uploads/dynamo-store.js';
import { SessionLeftovers } from './uploads/leftovers.js';
import { type SessionNeighbours, UploadSessionService } from './uploads/service.js';

/**
 * A part of the Composition: how it is built from the Composition's configuration, clock and
 * other parts. Each is built on first use (`app.use(part)`) and kept for the
 * life of the Composition, so every adapter exists once per Composition.
 *
 * Parts are functions, not members of the Composition class: esbuild drops unused
 * functions but never unused class members, so a function bundles only the
 * parts it uses and what they build (a GET of a conversation neither builds
 * nor bundles the S3 calls).
 */
export type Part<T> = (app: Composition) => T;

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

export const dynamo: Part<DynamoDBDocumentClient> = (app) => app.closing(createDynamoClient(app.config), (client) => client.destroy());

/** What S3 requests and URLs are signed with (shared/files/credentials.ts), resolved and cached once per Composition. */
export const credentials: Part<Credentials> = (app) => filesCredentials(app.config);

/**
 * Presigned S3 URLs of the files bucket (downloads, and the part uploads of
 * upload sessions), signed in the process without the S3 client
 * (shared/s3/presigner.ts).
 */
export const presigner: Part<S3Presigner> = (app) => {
  const { region, filesBucket, s3Endpoint } = app.config;
  return new S3Presigner({ region, bucket: filesBucket, endpoint: s3Endpoint, credentials: app.use(credentials) });
};

/** Links to attachment files (file_url), signed by the presigner. */
export const fileLinks: Part<S3FileLinks> = (app) => new S3FileLinks(app.use(presigner), app.config.fileUrlTtlSeconds);

/** The S3 calls of the files bucket: only the functions that write, read or remove files use it. */
export const s3Bucket: Part<S3Bucket> = (app) =>
  app.closing(createFilesBucket(app.config, app.use(credentials)), (bucket) => bucket.destroy());

/** The files of attachments and upload sessions. */
export const fileStore: Part<S3FileStore> = (app) => new S3FileStore(app.use(s3Bucket), app.use(presigner));

/** Users' feeds of events, appended to in the transactions of the changes they record. */
export const outbox: Part<Outbox> = (app) => new Outbox(app.use(dynamo), app.config.eventsTable, app.clock);

/** The event endpoints: a user's feed, read. */
export const events: Part<EventService> = (app) => new EventService(new EventStore(app.use(dynamo), app.config.eventsTable, app.clock));

export const conversationStore: Part<DynamoConversationStore> = (app) =>
  new DynamoConversationStore(app.use(dynamo), app.config.conversationsTable, app.use(outbox), app.clock);

export const attachmentStore: Part<DynamoAttachmentStore> = (app) =>
  new DynamoAttachmentStore(app.use(dynamo), app.config.attachmentsTable, app.config.conversationsTable, app.use(outbox));

export const conversations: Part<ConversationService> = (app) => new ConversationService(app.use(conversationStore), app.clock);

/** The attachment functions that never touch the files (get, list, rename, delete): records and links, no S3 calls. */
export const attachments: Part<AttachmentService> = (app) =>
  new AttachmentService(app.use(attachmentStore), app.use(fileLinks), app.use(conversations), app.config.scanning);

/** The upload function: the attachment's file, then its record. */
export const attachmentUploads: Part<AttachmentUploads> = (app) =>
  new AttachmentUploads(
    app.use(attachmentStore),
    app.use(attachments),
    app.use(conversations),
    app.use(fileStore),
    app.config.scanning,
    app.clock,
  );

/** For the cleanup function: a removed conversation's attachment records, and the files no record holds. */
export const attachmentLeftovers: Part<AttachmentLeftovers> = (app) =>
  new AttachmentLeftovers(app.use(attachmentStore), app.use(fileStore));

/** The upload session service, for the upload-session functions. */
export const uploadSessions: Part<UploadSessionService> = (app) => {
  const { uploadSessionsTable, attachmentsTable, conversationsTable, fileUrlTtlSeconds, uploadSessionTtlSeconds } = app.config;
  return new UploadSessionService(
    new DynamoUploadSessionStore(
      app.use(dynamo),
      { sessions: uploadSessionsTable, attachments: attachmentsTable, conversations: conversationsTable },
      app.use(outbox),
    ),
    app.use(fileStore),
    // A part URL lives as long as a file_url: minutes, asked for again when it lapses.
    { sessionTtlSeconds: uploadSessionTtlSeconds, partUrlTtlSeconds: fileUrlTtlSeconds, scanning: app.config.scanning },
    app.clock,
  );
};

/** What completing a session needs of the conversations and attachments (the complete function's alone). */
export const sessionNeighbours: Part<SessionNeighbours> = (app) => ({
  memberConversation: (caller, id, param) => app.use(conversations).memberConversation(caller, id, param),
  getAttachment: (caller, id) => app.use(attachments).getAttachment(caller, id),
  relink: (record) => app.use(attachments).relink(record),
});

/** For the cleanup function: the attachment records, consistently read, and the files bucket. */
export const sessionLeftovers: Part<SessionLeftovers> = (app) => new SessionLeftovers(app.use(attachmentStore), app.use(fileStore));

/** For the fan-out function: the sides of a thread's other members, and their feeds. */
export const fanOut: Part<FanOut> = (app) => {
  const sides = app.use(conversationStore);
  const { conversationsTable, eventsTable } = app.config;
  return new FanOut(
    sides,
    new SideDelivery(app.use(dynamo), conversationsTable, eventsTable, sides, app.use(outbox), app.clock, app.config.scanning),
  );
};

export const idempotency: Part<IdempotencyService> = (app) =>
  new IdempotencyService(new DynamoIdempotencyStore(app.use(dynamo), app.config.idempotencyTable));

/** For the real-time publisher: posts hints to the Event API, signed with the function's own credentials. */
export const realtimePublisher: Part<EventApiPublisher> = (app) => {
  const { realtime, region } = app.config;
  if (!realtime) throw new Error('REALTIME_URL and REALTIME_HOST are not set: the publisher has no Event API to post to');
  return new EventApiPublisher(realtime, region, app.use(credentials));
};

/** For the fan-out: the preview worker's queue, fed with each new record whose preview is pending. */
export const previewQueue: Part<SqsPreviewQueue> = (app) => {
  const { previewQueueUrl, region } = app.config;
  if (!previewQueueUrl) throw new Error('PREVIEW_QUEUE_URL is not set: a pending preview has no worker to go to');
  return new SqsPreviewQueue(previewQueueUrl, region, app.use(credentials));
};

/** For the preview worker: the records, and the files read and thumbnails written. */
export const previewWorker: Part<PreviewWorker> = (app) =>
  new PreviewWorker(app.use(attachmentStore), app.use(fileStore), app.config.previewMaxBytes);

/** Scan results on the attachments table: the recorder's, and the fan-out's for a record whose result came first. */
export const scanStore: Part<DynamoScanStore> = (app) =>
  new DynamoScanStore(app.use(dynamo), app.config.attachmentsTable, app.use(outbox), app.clock);

/** For the scan recorder: GuardDuty's results on the records, a failed scan asked again once. */
export const scanRecorder: Part<ScanRecorder> = (app) => {
  const { region, guardDutyEndpoint } = app.config;
  return new ScanRecorder(app.use(scanStore), new GuardDutyRescans(region, app.use(credentials), guardDutyEndpoint));
};
