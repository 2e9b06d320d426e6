import { conversations } from '../../shared/app.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { pathId } from '../../shared/http/request.js';
import { deleted } from '../../shared/http/response.js';
import { isConversationId } from '../../shared/ids.js';
import { DeleteConversation } from '../../shared/routes.js';

export const handler = httpHandler(DeleteConversation, async (request, composition) => {
  const id = pathId(request, 'conversation', isConversationId);
  // Its attachments (records and files) follow from the table's stream (functions/cleanup.ts).
  await composition.use(conversations).deleteConversation(request.caller, id);
  return deleted(id);
});
