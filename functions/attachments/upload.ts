import { attachments, attachmentUploads } from '../../shared/app.js';
import { attachmentReplay, uploadMeaning } from '../../shared/attachments/idempotency.js';
import { readMultipart } from '../../shared/attachments/multipart.js';
import { uploadLimits, uploadOf } from '../../shared/attachments/upload-params.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { created } from '../../shared/http/response.js';
import { UploadAttachment } from '../../shared/routes.js';

export const handler = httpHandler(UploadAttachment, {
  input: async (request, app) => uploadOf(await readMultipart(request, uploadLimits(app.config.maxFileBytes))),
  meaning: uploadMeaning,
  replay: (request, app) => attachmentReplay(request.caller, app.use(attachments)),
  run: async (upload, request, app) => created(await app.use(attachmentUploads).upload(request.caller, upload, request.seed)),
});
