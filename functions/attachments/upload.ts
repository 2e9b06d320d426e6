import { httpHandler } from '../../shared/http/handler.js';
import { created } from '../../shared/http/response.js';
import { uploadMeaning, uploadReplay } from '../../shared/attachments/idempotency.js';
import { readMultipart } from '../../shared/attachments/multipart.js';
import { uploadLimits, uploadOf } from '../../shared/attachments/upload-params.js';
import { config } from '../../shared/config.js';
import { withIdempotency } from '../../shared/idempotency/with-idempotency.js';
import { attachments } from '../../shared/services.js';

export const handler = httpHandler(async (request) => {
  const upload = uploadOf(await readMultipart(request, uploadLimits(config().maxFileBytes)));
  return withIdempotency(
    request,
    uploadMeaning(upload),
    async () => created(await attachments().upload(request.userId, upload)),
    uploadReplay(request.userId),
  );
});
