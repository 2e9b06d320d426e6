import { conversations } from '../../shared/app.js';
import { listOrder, listParams } from '../../shared/conversations/params.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { ok } from '../../shared/http/response.js';
import { pageRequest } from '../../shared/pagination.js';
import { ListConversations } from '../../shared/routes.js';

export const handler = httpHandler(
  ListConversations,
  async (request, composition) => {
    const { muted, archived, pinned, unread, group_id, contact_id, order, pinned_first, cursor_active_at, ...paging } = request.query;
    const { page } = await composition
      .use(conversations)
      .listConversations(
        request.caller,
        { muted, archived, pinned, unread, group_id, contact_id },
        pageRequest(paging),
        listOrder({ order, pinned_first, cursor_active_at, ...paging }),
      );
    return ok(page);
  },
  { query: listParams },
);
