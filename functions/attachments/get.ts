import { httpHandler } from '../../shared/http/handler.js';
import { pathId } from '../../shared/http/request.js';
import { ok } from '../../shared/http/response.js';
import { isAttachmentId } from '../../shared/ids.js';
import { attachments } from '../../shared/services.js';

export const handler = httpHandler(async (request) => {
  const id = pathId(request, 'attachment', isAttachmentId);
  return ok(await attachments().getAttachment(request.userId, id));
});
