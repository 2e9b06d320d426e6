import { httpHandler } from '../../shared/http/handler.js';
import { created } from '../../shared/http/response.js';
import { readMultipart } from '../../shared/attachments/multipart.js';
import { uploadLimits, uploadOf } from '../../shared/attachments/params.js';
import { config } from '../../shared/config.js';
import { attachments } from '../../shared/services.js';

export const handler = httpHandler(async (request) => {
  const upload = uploadOf(await readMultipart(request, uploadLimits(config().maxFileBytes)));
  return created(await attachments().upload(request.userId, upload));
});
