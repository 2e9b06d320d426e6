import { attachmentWriter } from '../../shared/attachments/writer.js';
import { httpHandler } from '../../shared/http/handler.js';
import { pathId } from '../../shared/http/request.js';
import { deleted } from '../../shared/http/response.js';
import { isConversationId } from '../../shared/ids.js';

export const handler = httpHandler(async (request, app) => {
  const id = pathId(request, 'conversation', isConversationId);
  // A conversation goes with its attachments (records and files).
  await app.conversations.deleteConversation(request.userId, id, [app.use(attachmentWriter)]);
  return deleted(id);
});
