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
  replay: (request, composition) => attachmentReplay(request.caller, composition.use(attachments)),
  run: async ({ id, parts }, request, composition) =>
    created(await composition.use(uploadSessions).complete(request.caller, id, parts, fileTypeSniffer, composition.use(sessionNeighbours))),
});
