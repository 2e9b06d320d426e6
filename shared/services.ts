import { config } from './config.js';
import { DynamoConversationStore } from './conversations/dynamo-store.js';
import { ConversationService } from './conversations/service.js';
import { dynamo } from './dynamo/client.js';
import { DynamoIdempotencyStore } from './idempotency/dynamo-store.js';
import { IdempotencyService } from './idempotency/service.js';

/**
 * The services, wired to their stores once per process (kept across warm
 * invocations). Handlers call these; tests of pure logic build their own.
 */
let conversationService: ConversationService | undefined;

export function conversations(): ConversationService {
  conversationService ??= new ConversationService(new DynamoConversationStore(dynamo(), config().conversationsTable));
  return conversationService;
}

let idempotencyService: IdempotencyService | undefined;

export function idempotency(): IdempotencyService {
  idempotencyService ??= new IdempotencyService(new DynamoIdempotencyStore(dynamo(), config().idempotencyTable));
  return idempotencyService;
}
