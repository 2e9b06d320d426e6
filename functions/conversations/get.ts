import { conversations } from '../../shared/app.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { pathId } from '../../shared/http/request.js';
import { ok } from '../../shared/http/response.js';
import { isConversationId } from '../../shared/ids.js';
import { GetConversation } from '../../shared/routes.js';

export const handler = httpHandler(GetConversation, async (request, composition) => {
  const id = pathId(request, 'conversation', isConversationId);
  return ok(await composition.use(conversations).getConversation(request.caller, id));
});
