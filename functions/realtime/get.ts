import { largeThreads } from '../../shared/app.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { ok } from '../../shared/http/response.js';
import { realtimeEndpoint } from '../../shared/realtime/endpoint.js';
import { GetRealtime } from '../../shared/routes.js';

export const handler = httpHandler(GetRealtime, async (request, app) => {
  const large = await app.use(largeThreads).activityOf([...request.caller.groups]);
  return ok(realtimeEndpoint(app.config, request.caller.userId, [...large.keys()]));
});
