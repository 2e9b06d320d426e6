import { httpHandler } from '../../shared/http/handler.js';
import { pathId } from '../../shared/http/request.js';
import { deleted } from '../../shared/http/response.js';
import { isConversationId } from '../../shared/ids.js';
import { attachments, conversations } from '../../shared/services.js';

export const handler = httpHandler(async (request) => {
  const id = pathId(request, 'conversation', isConversationId);
  // A conversation goes with its attachments (records and files).
  await conversations().deleteConversation(request.userId, id, [attachments()]);
  return deleted(id);
});
