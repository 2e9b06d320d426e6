import { httpHandler } from '../../shared/http/handler.js';
import { pathId } from '../../shared/http/request.js';
import { deleted } from '../../shared/http/response.js';
import { isConversationId } from '../../shared/ids.js';
import { conversations } from '../../shared/services.js';

export const handler = httpHandler(async (request) => {
  const id = pathId(request, 'conversation', isConversationId);
  await conversations().deleteConversation(request.userId, id);
  return deleted(id);
});
