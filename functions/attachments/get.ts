import { httpHandler } from '../../shared/http/handler.js';
import { pathId } from '../../shared/http/request.js';
import { ok } from '../../shared/http/response.js';
import { isAttachmentId } from '../../shared/ids.js';
import { attachmentViewer } from '../../shared/services.js';

export const handler = httpHandler(async (request) => {
  const id = pathId(request, 'attachment', isAttachmentId);
  return ok(await attachmentViewer().getAttachment(request.userId, id));
});
