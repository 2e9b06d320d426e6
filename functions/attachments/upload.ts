import { attachments, attachmentUploads } from '../../shared/app.js';
import { attachmentReplay, uploadMeaning } from '../../shared/attachments/idempotency.js';
import { readMultipart } from '../../shared/attachments/multipart.js';
import { uploadLimits, uploadOf } from '../../shared/attachments/upload-params.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { created } from '../../shared/http/response.js';
import { UploadAttachment } from '../../shared/routes.js';

export const handler = httpHandler(UploadAttachment, {
  input: async (request, composition) => uploadOf(await readMultipart(request, uploadLimits(composition.config.maxFileBytes))),
  meaning: uploadMeaning,
  replay: (request, composition) => attachmentReplay(request.caller, composition.use(attachments)),
  run: async (upload, request, composition) =>
    created(await composition.use(attachmentUploads).upload(request.caller, upload, request.seed)),
});
