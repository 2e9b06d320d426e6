import { httpHandler } from '../../shared/http/handler.js';
import { readParams } from '../../shared/http/params.js';
import { formOrJsonBody, pathId } from '../../shared/http/request.js';
import { ok } from '../../shared/http/response.js';
import { renameOf, renameParams } from '../../shared/attachments/params.js';
import { isAttachmentId } from '../../shared/ids.js';
import { attachmentViewer } from '../../shared/services.js';

export const handler = httpHandler(async (request) => {
  const id = pathId(request, 'attachment', isAttachmentId);
  const filename = renameOf(readParams(formOrJsonBody(request), renameParams));
  return ok(await attachmentViewer().renameAttachment(request.userId, id, filename));
});
