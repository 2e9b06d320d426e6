import { events } from '../../shared/app.js';
import { listParams } from '../../shared/events/params.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { ok } from '../../shared/http/response.js';
import { pageRequest } from '../../shared/pagination.js';
import { ListEvents } from '../../shared/routes.js';

export const handler = httpHandler(
  ListEvents,
  async (request, composition) => {
    const { type, conversation_id, ...paging } = request.query;
    return ok(await composition.use(events).listEvents(request.caller, type, pageRequest(paging), conversation_id));
  },
  { query: listParams },
);
