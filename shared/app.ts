import type { S3Client } from '@aws-sdk/client-s3';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { AttachmentService } from './attachments/service.js';
import { DynamoAttachmentStore } from './attachments/dynamo-store.js';
import { S3FileStore } from './attachments/s3-file-store.js';
import { readConfig, type Config } from './config.js';
import { DynamoConversationStore } from './conversations/dynamo-store.js';
import { ConversationService } from './conversations/service.js';
import { createDynamoClient } from './dynamo/client.js';
import { DynamoIdempotencyStore } from './idempotency/dynamo-store.js';
import { IdempotencyService } from './idempotency/service.js';
import { createS3Client } from './s3/client.js';
import { systemClock, type Clock } from './time.js';
import { DynamoUploadSessionStore } from './uploads/dynamo-store.js';
import { UploadSessionService } from './uploads/service.js';

/**
 * The composition root: from one configuration, the clients and the services
 * the handlers call. Each part is built on first use (a GET of a conversation
 * never builds the S3 client) and kept for the life of the App.
 *
 * On Lambda there is one App per process (processApp(), from the function's
 * environment, kept across warm invocations); the local server builds one per
 * server from the settings it was given.
 */
export class App {
  private built = new Map<string, unknown>();

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

  get s3(): S3Client {
    return this.once('s3', () => createS3Client(this.config));
  }

  get conversations(): ConversationService {
    return this.once(
      'conversations',
      () => new ConversationService(new DynamoConversationStore(this.dynamo, this.config.conversationsTable, this.clock), this.clock),
    );
  }

  get attachments(): AttachmentService {
    return this.once(
      'attachments',
      () =>
        new AttachmentService(
          new DynamoAttachmentStore(this.dynamo, this.config.attachmentsTable, this.config.conversationsTable),
          new S3FileStore(this.s3, this.config.filesBucket, this.config.fileUrlTtlSeconds),
          this.clock,
        ),
    );
  }

  get uploadSessions(): UploadSessionService {
    return this.once('uploadSessions', () => {
      const { uploadSessionsTable, attachmentsTable, conversationsTable, filesBucket, fileUrlTtlSeconds, uploadSessionTtlSeconds } = this.config;
      return new UploadSessionService(
        new DynamoUploadSessionStore(this.dynamo, { sessions: uploadSessionsTable, attachments: attachmentsTable, conversations: conversationsTable }),
        new S3FileStore(this.s3, filesBucket, fileUrlTtlSeconds),
        {
          hasConversation: async (userId, id) => (await this.conversations.findConversation(userId, id)) !== undefined,
          getAttachment: (userId, id) => this.attachments.getAttachment(userId, id),
          relink: (userId, record) => this.attachments.relink(userId, record),
        },
        // A part URL lives as long as a file_url: minutes, asked for again when it lapses.
        { sessionTtlSeconds: uploadSessionTtlSeconds, partUrlTtlSeconds: fileUrlTtlSeconds },
        this.clock,
      );
    });
  }

  get idempotency(): IdempotencyService {
    return this.once('idempotency', () => new IdempotencyService(new DynamoIdempotencyStore(this.dynamo, this.config.idempotencyTable)));
  }

  /** Closes the clients' connections (the local server, when it stops). */
  destroy(): void {
    (this.built.get('dynamo') as DynamoDBDocumentClient | undefined)?.destroy();
    (this.built.get('s3') as S3Client | undefined)?.destroy();
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
