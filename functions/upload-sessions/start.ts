import { uploadSessions } from '../../shared/uploads/sessions.js';
import { httpHandler } from '../../shared/http/handler.js';
import { readParams } from '../../shared/http/params.js';
import { formOrJsonBody, groupsOf } from '../../shared/http/request.js';
import { created } from '../../shared/http/response.js';
import { sessionRequestOf, startParams } from '../../shared/uploads/start-params.js';

export const handler = httpHandler(async (request, app) => {
  const session = sessionRequestOf(readParams(formOrJsonBody(request), startParams(app.config.maxUploadBytes)));
  return app.idempotency.run(request, session, async () => created(await app.use(uploadSessions).start(request.userId, groupsOf(request), session)));
});
