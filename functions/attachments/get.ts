import { attachments } from '../../shared/app.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { pathId } from '../../shared/http/request.js';
import { ok } from '../../shared/http/response.js';
import { isAttachmentId } from '../../shared/ids.js';
import { GetAttachment } from '../../shared/routes.js';

export const handler = httpHandler(GetAttachment, async (request, composition) => {
  const id = pathId(request, 'attachment', isAttachmentId);
  return ok(await composition.use(attachments).getAttachment(request.caller, id));
});
