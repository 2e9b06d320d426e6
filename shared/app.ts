import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { filesCredentials } from './files/credentials.js';
import { S3FileLinks } from './files/s3-file-links.js';
import { AttachmentViews } from './attachments/service.js';
import { DynamoAttachmentStore } from './attachments/dynamo-store.js';
import { readConfig, type Config } from './config.js';
import { DynamoConversationStore } from './conversations/dynamo-store.js';
import { ConversationService } from './conversations/service.js';
import { createDynamoClient } from './dynamo/client.js';
import { DynamoIdempotencyStore } from './idempotency/dynamo-store.js';
import { IdempotencyService } from './idempotency/service.js';
import { S3Presigner } from './s3/presigner.js';
import type { Credentials } from './s3/signer.js';
import { systemClock, type Clock } from './time.js';

/**
 * A part of the App that only some functions need, kept out of the App class
 * itself: esbuild drops unused functions but never unused class members, so
 * whatever a getter here references is in every function's bundle. A part
 * lives in its own module (the S3 client: shared/s3/client.ts; the attachment
 * writer: shared/attachments/writer.ts), and only the functions that import it
 * bundle it.
 */
export interface AppPart<T> {
  readonly name: string;
  build(app: App): T;
  destroy?(value: T): void;
}

/**
 * The composition root: from one configuration, the clients and the services
 * the handlers call. Each part is built on first use (a GET of a conversation
 * never builds the S3 client, nor bundles it) and kept for the life of the App.
 *
 * On Lambda there is one App per process (processApp(), from the function's
 * environment, kept across warm invocations); the local server builds one per
 * server from the settings it was given.
 */
export class App {
  private built = new Map<string, unknown>();
  private destroyers = new Map<string, () => void>();

  /**
   * `clock`: "now" for every rule that depends on it (creation and upload
   * times, how far ahead an open may be, whether a mute has ended, whether an
   * upload session has expired). Lambda
   * uses the system clock; the local server takes one so tests move time.
   */
  constructor(
    readonly config: Config,
    readonly clock: Clock = systemClock,
  ) {}

  get dynamo(): DynamoDBDocumentClient {
    return this.once('dynamo', () => createDynamoClient(this.config));
  }

  get conversations(): ConversationService {
    return this.once(
      'conversations',
      () => new ConversationService(new DynamoConversationStore(this.dynamo, this.config.conversationsTable, this.clock), this.clock),
    );
  }

  /** For the attachment functions that never touch the files (get, list, rename, delete): records and links, no S3 client. */
  get attachmentViews(): AttachmentViews {
    return this.once('attachmentViews', () => new AttachmentViews(new DynamoAttachmentStore(this.dynamo, this.config.attachmentsTable, this.config.conversationsTable), this.fileLinks, this.conversations));
  }

  /** Links to attachment files (file_url), signed by the presigner. */
  get fileLinks(): S3FileLinks {
    return this.once('fileLinks', () => new S3FileLinks(this.presigner, this.config.fileUrlTtlSeconds));
  }

  /**
   * Presigned S3 URLs of the files bucket (downloads, and the part uploads of
   * upload sessions), signed in the process without the S3 client
   * (shared/s3/presigner.ts).
   */
  get presigner(): S3Presigner {
    return this.once('presigner', () => {
      const { region, filesBucket, s3Endpoint } = this.config;
      return new S3Presigner({ region, bucket: filesBucket, endpoint: s3Endpoint, credentials: this.credentials });
    });
  }

  /** What S3 requests and URLs are signed with (shared/files/credentials.ts). */
  get credentials(): Credentials {
    return this.once('filesCredentials', () => filesCredentials(this.config));
  }

  get idempotency(): IdempotencyService {
    return this.once('idempotency', () => new IdempotencyService(new DynamoIdempotencyStore(this.dynamo, this.config.idempotencyTable)));
  }

  /** A part from its own module (see AppPart), built on first use and kept like the others. */
  use<T>(part: AppPart<T>): T {
    const value = this.once(part.name, () => part.build(this));
    if (part.destroy) this.destroyers.set(part.name, () => part.destroy!(value));
    return value;
  }

  /** Closes the clients' connections (the local server, when it stops). */
  destroy(): void {
    (this.built.get('dynamo') as DynamoDBDocumentClient | undefined)?.destroy();
    for (const destroy of this.destroyers.values()) destroy();
    this.destroyers.clear();
    this.built.clear();
  }

  private once<T>(name: string, build: () => T): T {
    if (!this.built.has(name)) this.built.set(name, build());
    return this.built.get(name) as T;
  }
}

let processApp: App | undefined;

/** The App of a Lambda process: its environment, read once. */
export function lambdaApp(): App {
  processApp ??= new App(readConfig(process.env));
  return processApp;
}
