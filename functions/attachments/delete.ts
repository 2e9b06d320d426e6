import { httpHandler } from '../../shared/http/handler.js';
import { pathId } from '../../shared/http/request.js';
import { deleted } from '../../shared/http/response.js';
import { isAttachmentId } from '../../shared/ids.js';

export const handler = httpHandler(async (request, app) => {
  const id = pathId(request, 'attachment', isAttachmentId);
  await app.attachmentViews.deleteAttachment(request.userId, id, request.requestId);
  return deleted(id);
});
