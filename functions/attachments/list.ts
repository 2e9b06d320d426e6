import { attachments } from '../../shared/app.js';
import { listParams } from '../../shared/attachments/params.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { ok } from '../../shared/http/response.js';
import { pageRequest } from '../../shared/pagination.js';
import { ListAttachments } from '../../shared/routes.js';

export const handler = httpHandler(
  ListAttachments,
  async (request, composition) => {
    const { conversation_id, ...paging } = request.query;
    return ok(await composition.use(attachments).listAttachments(request.caller, { conversation_id }, pageRequest(paging)));
  },
  { query: listParams },
);
