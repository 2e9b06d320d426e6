import type { AppPart } from '../app.js';
import { s3Bucket } from '../s3/client.js';
import { DynamoAttachmentStore } from './dynamo-store.js';
import { S3FileStore } from '../files/s3-file-store.js';
import { AttachmentService } from './service.js';

/**
 * The attachment service with its file store, for the functions that write or
 * remove files (the upload, and the stream cleanup that follows deletes): only
 * they import this module, so only their bundles carry the S3 calls
 * (shared/s3/bucket.ts).
 */
export const attachmentWriter: AppPart<AttachmentService> = {
  name: 'attachments',
  build: (app) =>
    new AttachmentService(
      new DynamoAttachmentStore(app.dynamo, app.config.attachmentsTable, app.config.conversationsTable),
      app.fileLinks,
      app.conversations,
      new S3FileStore(app.use(s3Bucket), app.presigner),
      app.clock,
    ),
};
