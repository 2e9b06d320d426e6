import { httpHandler } from '../../shared/http/handler.js';
import { ok } from '../../shared/http/response.js';
import { listParams } from '../../shared/conversations/params.js';
import { pageRequest } from '../../shared/pagination.js';

export const handler = httpHandler(async (request, app) => {
  const { muted, archived, pinned, unread, group_id, contact_id, ...paging } = request.query;
  const { page } = await app.conversations.listConversations(
    request.userId,
    { muted, archived, pinned, unread, group_id, contact_id },
    pageRequest(paging),
  );
  return ok(page);
}, { query: listParams });
