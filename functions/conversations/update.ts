import { conversations } from '../../shared/app.js';
import { updateParams } from '../../shared/conversations/params.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { readParams } from '../../shared/http/params.js';
import { formOrJsonBody, pathId } from '../../shared/http/request.js';
import { ok } from '../../shared/http/response.js';
import { isConversationId } from '../../shared/ids.js';
import { UpdateConversation } from '../../shared/routes.js';

export const handler = httpHandler(UpdateConversation, async (request, composition) => {
  const id = pathId(request, 'conversation', isConversationId);
  const changes = readParams(formOrJsonBody(request), updateParams);
  return ok(await composition.use(conversations).updateConversation(request.caller, id, changes));
});
