import { randomBytes } from 'node:crypto';
import { signToken } from '../../../shared/auth/tokens.js';
import { type Check, expect } from '../check.js';
import { type Answer, describe } from '../client.js';

/**
 * The two refusals every client meets: no token (the gateway itself, 401
 * token_missing) and a forged one (the authorizer's denial, 401
 * token_invalid), both in the error shape with the Bearer challenge.
 */
export const unauthenticated: Check = {
  name: '401 without a token, with a forged one',
  async run(context) {
    const refused = (answer: Answer, code: string, what: string) => {
      expect(answer.status === 401 && answer.body?.error?.code === code, `${what}: ${describe(answer)}, not 401 ${code}`);
      const challenge = answer.headers.get('www-authenticate') ?? '';
      expect(/^Bearer\b/i.test(challenge), `${what}: 401 without WWW-Authenticate: Bearer (got "${challenge}")`);
    };
    refused(await context.client.call(null, 'GET', '/v1/conversations'), 'token_missing', 'no token');
    // Well formed, signed with a key the stage does not hold, for a user of this run only.
    const forged = await signToken(randomBytes(32).toString('base64url'), `${context.marker}-forger`);
    refused(await context.client.call(forged, 'GET', '/v1/conversations'), 'token_invalid', 'a forged token');
    return 'token_missing, token_invalid';
  },
};
