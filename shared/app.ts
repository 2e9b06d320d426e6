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

  constructor(readonly config: Config) {}

  get dynamo(): DynamoDBDocumentClient {
    return this.once('dynamo', () => createDynamoClient(this.config));
  }

  get s3(): S3Client {
    return this.once('s3', () => createS3Client(this.config));
  }

  get conversations(): ConversationService {
    return this.once('conversations', () => new ConversationService(new DynamoConversationStore(this.dynamo, this.config.conversationsTable)));
  }

  get attachments(): AttachmentService {
    return this.once(
      'attachments',
      () =>
        new AttachmentService(
          new DynamoAttachmentStore(this.dynamo, this.config.attachmentsTable),
          new S3FileStore(this.s3, this.config.filesBucket, this.config.fileUrlTtlSeconds),
          this.conversations,
        ),
    );
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
