import { httpHandler } from '../../shared/http/lambda.js';
import { ok } from '../../shared/http/response.js';
import { realtimeEndpoint } from '../../shared/realtime/endpoint.js';
import { GetRealtime } from '../../shared/routes.js';

export const handler = httpHandler(GetRealtime, async (request, composition) =>
  ok(realtimeEndpoint(composition.config, request.caller.userId)),
);
