import { CORS_ALLOWED_HEADERS } from '../../../shared/http/cors.js';
import { type Check, expect } from '../check.js';
import { describe } from '../client.js';

/**
 * A browser's preflight of an upload, answered by the stage's mock
 * integration without a token: the methods and headers are fixed
 * (shared/http/cors.ts); the origin is allowed only when the stack was
 * deployed with it in `corsOrigins`. With --origin the stage must allow
 * that origin; without it an origin of this run's own must not be allowed
 * (unless the stage allows any, `*`).
 */
export const corsPreflight: Check = {
  name: 'CORS preflight',
  async run(context) {
    const origin = context.origin ?? `https://${context.marker}.invalid`;
    const answer = await context.client.call(null, 'OPTIONS', '/v1/attachments', {
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    });
    expect(answer.status === 204, `OPTIONS /v1/attachments: ${describe(answer)}, not 204`);
    const listed = (name: string) => (answer.headers.get(name) ?? '').split(',').map((value) => value.trim().toLowerCase());
    expect(
      listed('access-control-allow-methods').includes('post'),
      `Access-Control-Allow-Methods is "${answer.headers.get('access-control-allow-methods')}", without POST`,
    );
    for (const header of CORS_ALLOWED_HEADERS) {
      expect(
        listed('access-control-allow-headers').includes(header.toLowerCase()),
        `Access-Control-Allow-Headers is "${answer.headers.get('access-control-allow-headers')}", without ${header}`,
      );
    }
    const allowed = answer.headers.get('access-control-allow-origin');
    if (context.origin) {
      expect(
        allowed === origin || allowed === '*',
        `${origin} is not allowed (Access-Control-Allow-Origin: ${allowed ?? 'none'}): deploy with -c corsOrigins=${origin}`,
      );
      return `${origin} allowed`;
    }
    expect(allowed === null || allowed === '*', `an origin nobody configured is allowed (Access-Control-Allow-Origin: ${allowed})`);
    return allowed === '*' ? 'any origin allowed (*)' : 'no --origin: an unlisted origin is refused';
  },
};
