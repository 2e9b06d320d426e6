import { uploadSessions } from '../../shared/app.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { pathId } from '../../shared/http/request.js';
import { ok } from '../../shared/http/response.js';
import { isUploadSessionId } from '../../shared/ids.js';
import { GetUploadSession } from '../../shared/routes.js';

export const handler = httpHandler(GetUploadSession, async (request, composition) => {
  const id = pathId(request, 'upload_session', isUploadSessionId);
  return ok(await composition.use(uploadSessions).getSession(request.caller, id));
});
