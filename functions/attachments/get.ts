import { httpHandler } from '../../shared/http/handler.js';
import { pathId } from '../../shared/http/request.js';
import { ok } from '../../shared/http/response.js';
import { isAttachmentId } from '../../shared/ids.js';

export const handler = httpHandler(async (request, app) => {
  const id = pathId(request, 'attachment', isAttachmentId);
  return ok(await app.attachmentViews.getAttachment(request.userId, id));
});
