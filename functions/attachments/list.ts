import { httpHandler } from '../../shared/http/handler.js';
import { groupsOf } from '../../shared/http/request.js';
import { ok } from '../../shared/http/response.js';
import { listParams } from '../../shared/attachments/params.js';
import { pageRequest } from '../../shared/pagination.js';

export const handler = httpHandler(async (request, app) => {
  const { conversation_id, ...paging } = request.query;
  return ok(await app.attachmentViews.listAttachments(request.userId, groupsOf(request), { conversation_id }, pageRequest(paging)));
}, { query: listParams });
