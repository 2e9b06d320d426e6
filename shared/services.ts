import { AttachmentService } from './attachments/service.js';
import { DynamoAttachmentStore } from './attachments/dynamo-store.js';
import { S3FileStore } from './attachments/s3-file-store.js';
import { config } from './config.js';
import { DynamoConversationStore } from './conversations/dynamo-store.js';
import { ConversationService } from './conversations/service.js';
import { dynamo } from './dynamo/client.js';
import { DynamoIdempotencyStore } from './idempotency/dynamo-store.js';
import { IdempotencyService } from './idempotency/service.js';
import { s3 } from './s3/client.js';
import { DynamoUploadSessionStore } from './uploads/dynamo-store.js';
import { UploadSessionService } from './uploads/service.js';

/**
 * The services, wired to their stores once per process (kept across warm
 * invocations). Handlers call these; tests of pure logic build their own.
 */
let conversationService: ConversationService | undefined;
let attachmentService: AttachmentService | undefined;

export function conversations(): ConversationService {
  conversationService ??= new ConversationService(new DynamoConversationStore(dynamo(), config().conversationsTable));
  return conversationService;
}

export function attachments(): AttachmentService {
  const { attachmentsTable, filesBucket, fileUrlTtlSeconds } = config();
  attachmentService ??= new AttachmentService(
    new DynamoAttachmentStore(dynamo(), attachmentsTable),
    new S3FileStore(s3(), filesBucket, fileUrlTtlSeconds),
    // Looked up at the call: the conversation service depends on this one.
    { markActive: (userId, conversationId, at) => conversations().markActive(userId, conversationId, at) },
  );
  return attachmentService;
}

let idempotencyService: IdempotencyService | undefined;

export function idempotency(): IdempotencyService {
  idempotencyService ??= new IdempotencyService(new DynamoIdempotencyStore(dynamo(), config().idempotencyTable));
  return idempotencyService;
}

let uploadSessionService: UploadSessionService | undefined;

export function uploadSessions(): UploadSessionService {
  const { uploadSessionsTable, attachmentsTable, conversationsTable, filesBucket, fileUrlTtlSeconds, uploadSessionTtlSeconds } = config();
  uploadSessionService ??= new UploadSessionService(
    new DynamoUploadSessionStore(dynamo(), { sessions: uploadSessionsTable, attachments: attachmentsTable, conversations: conversationsTable }),
    new S3FileStore(s3(), filesBucket, fileUrlTtlSeconds),
    {
      hasConversation: async (userId, id) => (await conversations().findConversation(userId, id)) !== undefined,
      getAttachment: (userId, id) => attachments().getAttachment(userId, id),
      relink: (userId, record) => attachments().relink(userId, record),
    },
    // A part URL lives as long as a file_url: minutes, asked for again when it lapses.
    { sessionTtlSeconds: uploadSessionTtlSeconds, partUrlTtlSeconds: fileUrlTtlSeconds },
  );
  return uploadSessionService;
}
