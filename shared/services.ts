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
import { systemClock, type Clock } from './time.js';

/**
 * The services, wired to their stores once per process (kept across warm
 * invocations). Handlers call these; tests of pure logic build their own.
 */
let conversationService: ConversationService | undefined;
let attachmentService: AttachmentService | undefined;

/** Every rule that depends on "now" asks this clock; read through `now` so a test's clock reaches services already built. */
let clock: Clock = systemClock;
const now: Clock = () => clock();

/** The local server's option for tests that move time forward (mutes ending) without sleeping; Lambda never calls it. */
export function useClock(next: Clock): void {
  clock = next;
}

export function conversations(): ConversationService {
  conversationService ??= new ConversationService(new DynamoConversationStore(dynamo(), config().conversationsTable, now), now);
  return conversationService;
}

export function attachments(): AttachmentService {
  const { attachmentsTable, filesBucket, fileUrlTtlSeconds } = config();
  attachmentService ??= new AttachmentService(
    new DynamoAttachmentStore(dynamo(), attachmentsTable),
    new S3FileStore(s3(), filesBucket, fileUrlTtlSeconds),
    // Looked up at the call: the conversation service depends on this one.
    { markActive: (userId, conversationId, at) => conversations().markActive(userId, conversationId, at) },
    now,
  );
  return attachmentService;
}

let idempotencyService: IdempotencyService | undefined;

export function idempotency(): IdempotencyService {
  idempotencyService ??= new IdempotencyService(new DynamoIdempotencyStore(dynamo(), config().idempotencyTable));
  return idempotencyService;
}
