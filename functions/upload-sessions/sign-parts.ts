import { uploadSessions } from '../../shared/app.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { readParams } from '../../shared/http/params.js';
import { formOrJsonBody, pathId } from '../../shared/http/request.js';
import { ok } from '../../shared/http/response.js';
import { isUploadSessionId } from '../../shared/ids.js';
import { SignUploadParts } from '../../shared/routes.js';
import { partNumbersOf, signPartsParams } from '../../shared/uploads/params.js';

export const handler = httpHandler(SignUploadParts, async (request, composition) => {
  const id = pathId(request, 'upload_session', isUploadSessionId);
  const partNumbers = partNumbersOf(readParams(formOrJsonBody(request), signPartsParams));
  return ok({ data: await composition.use(uploadSessions).signParts(request.caller, id, partNumbers) });
});
