import { httpHandler } from '../../shared/http/handler.js';
import { readParams } from '../../shared/http/params.js';
import { formOrJsonBody, pathId } from '../../shared/http/request.js';
import { ok } from '../../shared/http/response.js';
import { updateParams } from '../../shared/conversations/params.js';
import { isConversationId } from '../../shared/ids.js';

export const handler = httpHandler(async (request, app) => {
  const id = pathId(request, 'conversation', isConversationId);
  const changes = readParams(formOrJsonBody(request), updateParams);
  return ok(await app.conversations.updateConversation(request.userId, id, changes));
});
