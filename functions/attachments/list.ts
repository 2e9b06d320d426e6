import { httpHandler } from '../../shared/http/handler.js';
import { ok } from '../../shared/http/response.js';
import { listParams } from '../../shared/attachments/params.js';
import { pageRequest } from '../../shared/pagination.js';
import { attachments } from '../../shared/services.js';

export const handler = httpHandler(async (request) => {
  const { conversation_id, ...paging } = request.query;
  return ok(await attachments().listAttachments(request.userId, { conversation_id }, pageRequest(paging)));
}, { query: listParams });
