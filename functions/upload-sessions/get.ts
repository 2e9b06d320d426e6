import { uploadSessions } from '../../shared/uploads/sessions.js';
import { httpHandler } from '../../shared/http/handler.js';
import { pathId } from '../../shared/http/request.js';
import { ok } from '../../shared/http/response.js';
import { isUploadSessionId } from '../../shared/ids.js';

export const handler = httpHandler(async (request, app) => {
  const id = pathId(request, 'upload_session', isUploadSessionId);
  return ok(await app.use(uploadSessions).getSession(request.userId, id));
});
