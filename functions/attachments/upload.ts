import { attachmentWriter } from '../../shared/attachments/writer.js';
import { httpHandler } from '../../shared/http/handler.js';
import { groupsOf } from '../../shared/http/request.js';
import { created } from '../../shared/http/response.js';
import { uploadMeaning, uploadReplay } from '../../shared/attachments/idempotency.js';
import { readMultipart } from '../../shared/attachments/multipart.js';
import { uploadLimits, uploadOf } from '../../shared/attachments/upload-params.js';

export const handler = httpHandler(async (request, app) => {
  const upload = uploadOf(await readMultipart(request, uploadLimits(app.config.maxFileBytes)));
  return app.idempotency.run(
    request,
    uploadMeaning(upload),
    async (seed) => created(await app.use(attachmentWriter).upload(request.userId, groupsOf(request), upload, seed)),
    uploadReplay(app.attachmentViews, request.userId),
  );
});
