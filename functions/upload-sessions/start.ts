import { httpHandler } from '../../shared/http/handler.js';
import { readParams } from '../../shared/http/params.js';
import { formOrJsonBody } from '../../shared/http/request.js';
import { created } from '../../shared/http/response.js';
import { config } from '../../shared/config.js';
import { withIdempotency } from '../../shared/idempotency/with-idempotency.js';
import { uploadSessions } from '../../shared/services.js';
import { sessionRequestOf, startParams } from '../../shared/uploads/start-params.js';

export const handler = httpHandler(async (request) => {
  const session = sessionRequestOf(readParams(formOrJsonBody(request), startParams(config().maxUploadBytes)));
  return withIdempotency(request, session, async () => created(await uploadSessions().start(request.userId, session)));
});
