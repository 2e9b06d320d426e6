import { attachments } from '../../shared/app.js';
import { renameOf, renameParams } from '../../shared/attachments/params.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { readParams } from '../../shared/http/params.js';
import { formOrJsonBody, pathId } from '../../shared/http/request.js';
import { ok } from '../../shared/http/response.js';
import { isAttachmentId } from '../../shared/ids.js';
import { UpdateAttachment } from '../../shared/routes.js';

export const handler = httpHandler(UpdateAttachment, async (request, composition) => {
  const id = pathId(request, 'attachment', isAttachmentId);
  const filename = renameOf(readParams(formOrJsonBody(request), renameParams));
  return ok(await composition.use(attachments).renameAttachment(request.caller, id, filename));
});
