import { config } from './config.js';
import { DynamoConversationStore } from './conversations/dynamo-store.js';
import { ConversationService } from './conversations/service.js';
import { dynamo } from './dynamo/client.js';

/**
 * The services, wired to their stores once per process (kept across warm
 * invocations). Handlers call these; tests of pure logic build their own.
 */
let conversationService: ConversationService | undefined;

export function conversations(): ConversationService {
  conversationService ??= new ConversationService(new DynamoConversationStore(dynamo(), config().conversationsTable));
  return conversationService;
}
