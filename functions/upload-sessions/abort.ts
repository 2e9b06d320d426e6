import { httpHandler } from '../../shared/http/handler.js';
import { pathId } from '../../shared/http/request.js';
import { deleted } from '../../shared/http/response.js';
import { isUploadSessionId } from '../../shared/ids.js';
import { uploadSessions } from '../../shared/services.js';

export const handler = httpHandler(async (request) => {
  const id = pathId(request, 'upload_session', isUploadSessionId);
  await uploadSessions().abort(request.userId, id);
  return deleted(id);
});
