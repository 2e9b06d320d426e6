import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { REPOSITORY_ROOT } from '../../infra/declarations/repository.js';
import { type HttpHandler, httpPipeline } from '../../shared/http/handler.js';
import { ok } from '../../shared/http/response.js';
import { CreateConversation, GetConversation, routes } from '../../shared/routes.js';

/**
 * The route row is the one declaration of a route's Idempotency-Key: the
 * stack grants the idempotency table from it (infra/declarations/permissions.ts) and the
 * handler follows it. These hold the two together.
 */
describe('the route table and the handler modules', () => {
  it.each(routes.map((route) => [route.name, route] as const))('%s: its module is made for its own row', async (_, route) => {
    const { handler } = (await import(pathToFileURL(join(REPOSITORY_ROOT, route.entry)).href)) as { handler: HttpHandler<unknown> };
    // Identity: the handler imported this very row, so its idempotent flag is the one the stack reads.
    expect(handler.route).toBe(route);
  });

  it('lets an idempotent row take only an idempotent endpoint, and any other row only a plain one', () => {
    const httpHandler = httpPipeline({
      composition: () => ({ config: { corsOrigins: [] } }),
      idempotency: () => {
        throw new Error('not reached');
      },
    });
    const plain = async () => ok({});
    const idempotent = { input: () => ({}), run: async () => ok({}) };
    expect(() => httpHandler(GetConversation, plain)).not.toThrow();
    expect(() => httpHandler(CreateConversation, idempotent)).not.toThrow();
    // Neither compiles; the pipeline refuses them too, when the module loads.
    // @ts-expect-error an idempotent row with a plain endpoint
    expect(() => httpHandler(CreateConversation, plain)).toThrow(/CreateConversation: an idempotent route takes an IdempotentEndpoint/);
    // @ts-expect-error a plain row with an idempotent endpoint
    expect(() => httpHandler(GetConversation, idempotent)).toThrow(/GetConversation/);
  });
});
