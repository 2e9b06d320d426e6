import { attachments, sessionNeighbours, uploadSessions } from '../../shared/app.js';
import { attachmentReplay } from '../../shared/attachments/idempotency.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { readParams } from '../../shared/http/params.js';
import { formOrJsonBody, pathId } from '../../shared/http/request.js';
import { created } from '../../shared/http/response.js';
import { isUploadSessionId } from '../../shared/ids.js';
import { CompleteUploadSession } from '../../shared/routes.js';
import { completedPartsOf, completeParams } from '../../shared/uploads/params.js';
import { fileTypeSniffer } from '../../shared/uploads/sniff.js';

export const handler = httpHandler(CompleteUploadSession, {
  input: (request) => ({
    id: pathId(request, 'upload_session', isUploadSessionId),
    parts: completedPartsOf(readParams(formOrJsonBody(request), completeParams)),
  }),
  // The answer is an attachment: stored without its file_url, replayed with a fresh one.
  replay: (request, app) => attachmentReplay(request.caller, app.use(attachments)),
  run: async ({ id, parts }, request, app) =>
    created(await app.use(uploadSessions).complete(request.caller, id, parts, fileTypeSniffer, app.use(sessionNeighbours))),
});
