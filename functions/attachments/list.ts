import { httpHandler } from '../../shared/http/handler.js';
import { readParams } from '../../shared/http/params.js';
import { queryOf } from '../../shared/http/request.js';
import { ok } from '../../shared/http/response.js';
import { listParams } from '../../shared/attachments/params.js';
import { pageRequest } from '../../shared/pagination.js';

export const handler = httpHandler(async (request, app) => {
  const { conversation_id, ...paging } = readParams(queryOf(request), listParams);
  return ok(await app.attachmentViews.listAttachments(request.userId, { conversation_id }, pageRequest(paging)));
});
