import { AttachmentService, AttachmentViews } from './attachments/service.js';
import { DynamoAttachmentStore } from './attachments/dynamo-store.js';
import { S3FileLinks } from './attachments/s3-file-links.js';
import { S3FileStore } from './attachments/s3-file-store.js';
import { config } from './config.js';
import { DynamoConversationStore } from './conversations/dynamo-store.js';
import { ConversationService } from './conversations/service.js';
import { dynamo } from './dynamo/client.js';
import { DynamoIdempotencyStore } from './idempotency/dynamo-store.js';
import { IdempotencyService } from './idempotency/service.js';
import { s3 } from './s3/client.js';
import { S3Presigner } from './s3/presigner.js';

/**
 * The services, wired to their stores once per process (kept across warm
 * invocations). Handlers call these; tests of pure logic build their own.
 */
let conversationService: ConversationService | undefined;
let attachmentService: AttachmentService | undefined;
let attachmentViews: AttachmentViews | undefined;
let fileLinks: S3FileLinks | undefined;

export function conversations(): ConversationService {
  conversationService ??= new ConversationService(new DynamoConversationStore(dynamo(), config().conversationsTable));
  return conversationService;
}

/** For the functions that upload and delete: records, files and links. */
export function attachments(): AttachmentService {
  const { attachmentsTable, filesBucket } = config();
  attachmentService ??= new AttachmentService(
    new DynamoAttachmentStore(dynamo(), attachmentsTable),
    links(),
    new S3FileStore(s3(), filesBucket),
    // Looked up at the call: the conversation service depends on this one.
    { markActive: (userId, conversationId, at) => conversations().markActive(userId, conversationId, at) },
  );
  return attachmentService;
}

/** For the functions that only show attachments: records and links, no S3 client in their bundles. */
export function attachmentViewer(): AttachmentViews {
  attachmentViews ??= new AttachmentViews(new DynamoAttachmentStore(dynamo(), config().attachmentsTable), links());
  return attachmentViews;
}

/**
 * file_url is signed in the process with the DynamoDB client's credentials
 * (the same default chain the S3 client would resolve: Lambda's role).
 */
function links(): S3FileLinks {
  const { region, filesBucket, s3Endpoint, fileUrlTtlSeconds } = config();
  fileLinks ??= new S3FileLinks(
    new S3Presigner({ region, bucket: filesBucket, endpoint: s3Endpoint, credentials: dynamo().config.credentials }),
    fileUrlTtlSeconds,
  );
  return fileLinks;
}

let idempotencyService: IdempotencyService | undefined;

export function idempotency(): IdempotencyService {
  idempotencyService ??= new IdempotencyService(new DynamoIdempotencyStore(dynamo(), config().idempotencyTable));
  return idempotencyService;
}
