import { largeThreads } from '../../shared/app.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { ok } from '../../shared/http/response.js';
import { realtimeEndpoint } from '../../shared/realtime/endpoint.js';
import { GetRealtime } from '../../shared/routes.js';

export const handler = httpHandler(GetRealtime, async (request, composition) => {
  const large = await composition.use(largeThreads).activityOf([...request.caller.groups]);
  return ok(realtimeEndpoint(composition.config, request.caller.userId, [...large.keys()]));
});
