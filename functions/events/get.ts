import { events } from '../../shared/app.js';
import { isEventId } from '../../shared/events/ids.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { pathId } from '../../shared/http/request.js';
import { ok } from '../../shared/http/response.js';
import { GetEvent } from '../../shared/routes.js';

export const handler = httpHandler(GetEvent, async (request, composition) => {
  const id = pathId(request, 'event', isEventId);
  return ok(await composition.use(events).getEvent(request.caller, id));
});
