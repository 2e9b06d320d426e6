import { httpHandler } from '../../shared/http/handler.js';
import { readParams } from '../../shared/http/params.js';
import { formOrJsonBody, pathId } from '../../shared/http/request.js';
import { ok } from '../../shared/http/response.js';
import { updateParams } from '../../shared/conversations/params.js';
import { isConversationId } from '../../shared/ids.js';
import { conversations } from '../../shared/services.js';

export const handler = httpHandler(async (request) => {
  const id = pathId(request, 'conversation', isConversationId);
  const changes = readParams(formOrJsonBody(request), updateParams);
  return ok(await conversations().updateConversation(request.userId, id, changes));
});
