import type { AppPart } from '../app.js';
import { S3FileStore } from '../files/s3-file-store.js';
import { s3Bucket } from '../s3/client.js';
import { DynamoUploadSessionStore } from './dynamo-store.js';
import { UploadSessionService } from './service.js';

/**
 * The upload session service, for the upload-session functions: it needs the
 * S3 calls (multipart uploads, shared/s3/bucket.ts), so it is an AppPart in
 * its own module (see AppPart in shared/app.ts) and no other function bundles it.
 */
export const uploadSessions: AppPart<UploadSessionService> = {
  name: 'uploadSessions',
  build: (app) => {
    const { uploadSessionsTable, attachmentsTable, conversationsTable, fileUrlTtlSeconds, uploadSessionTtlSeconds } = app.config;
    return new UploadSessionService(
      new DynamoUploadSessionStore(app.dynamo, { sessions: uploadSessionsTable, attachments: attachmentsTable, conversations: conversationsTable }),
      new S3FileStore(app.use(s3Bucket), app.presigner),
      {
        memberConversation: (userId, groups, id, param) => app.conversations.memberConversation(userId, groups, id, param),
        getAttachment: (userId, id) => app.attachmentViews.getAttachment(userId, id),
        relink: (userId, record) => app.attachmentViews.relink(userId, record),
      },
      // A part URL lives as long as a file_url: minutes, asked for again when it lapses.
      { sessionTtlSeconds: uploadSessionTtlSeconds, partUrlTtlSeconds: fileUrlTtlSeconds },
      app.clock,
    );
  },
};
