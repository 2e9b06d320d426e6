import { MAX_TEXT_BODY_BYTES } from '../../declarations/size-guard.js';
import { type Check, expect } from '../check.js';
import { describe } from '../client.js';

/**
 * One byte over the text body limit: the size guard (the WAF web ACL on the
 * stage) answers 413 in the error shape before any function runs. Without it
 * this body reaches the handler (400 body_invalid), and a larger one makes an
 * event Lambda refuses (a 5xx in another shape). It is not valid JSON, so no
 * stage, guarded or not, makes anything of it.
 */
export const sizeGuard: Check = {
  name: 'size guard: 413 body_too_large',
  async run(context) {
    const body = Buffer.alloc(MAX_TEXT_BODY_BYTES + 1, 'x');
    const answer = await context.client.call(context.user.token, 'POST', '/v1/conversations', {
      body,
      headers: { 'content-type': 'application/json' },
    });
    expect(
      answer.status === 413 && answer.body?.error?.code === 'body_too_large' && answer.body.error.type === 'invalid_request_error',
      `a ${body.length}-byte body answered ${describe(answer)}, not 413 body_too_large`,
    );
    return `${body.length} bytes refused`;
  },
};
