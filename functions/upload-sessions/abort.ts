import { uploadSessions } from '../../shared/app.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { pathId } from '../../shared/http/request.js';
import { deleted } from '../../shared/http/response.js';
import { isUploadSessionId } from '../../shared/ids.js';
import { AbortUploadSession } from '../../shared/routes.js';

export const handler = httpHandler(AbortUploadSession, async (request, composition) => {
  const id = pathId(request, 'upload_session', isUploadSessionId);
  await composition.use(uploadSessions).abort(request.caller, id);
  return deleted(id);
});
