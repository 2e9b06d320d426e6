import { uploadSessions } from '../../shared/uploads/sessions.js';
import { httpHandler } from '../../shared/http/handler.js';
import { readParams } from '../../shared/http/params.js';
import { formOrJsonBody, groupsOf, pathId } from '../../shared/http/request.js';
import { created } from '../../shared/http/response.js';
import { uploadReplay } from '../../shared/attachments/idempotency.js';
import { isUploadSessionId } from '../../shared/ids.js';
import { completedPartsOf, completeParams } from '../../shared/uploads/params.js';
import { fileTypeSniffer } from '../../shared/uploads/sniff.js';

export const handler = httpHandler(async (request, app) => {
  const id = pathId(request, 'upload_session', isUploadSessionId);
  const parts = completedPartsOf(readParams(formOrJsonBody(request), completeParams));
  return app.idempotency.run(
    request,
    { id, parts },
    async () => created(await app.use(uploadSessions).complete(request.userId, groupsOf(request), id, parts, fileTypeSniffer, request.requestId)),
    // The answer is an attachment: stored without its file_url, replayed with a fresh one.
    uploadReplay(app.attachmentViews, request.userId),
  );
});
