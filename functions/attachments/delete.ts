import { attachments } from '../../shared/app.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { pathId } from '../../shared/http/request.js';
import { deleted } from '../../shared/http/response.js';
import { isAttachmentId } from '../../shared/ids.js';
import { DeleteAttachment } from '../../shared/routes.js';

export const handler = httpHandler(DeleteAttachment, async (request, composition) => {
  const id = pathId(request, 'attachment', isAttachmentId);
  await composition.use(attachments).deleteAttachment(request.caller, id);
  return deleted(id);
});
