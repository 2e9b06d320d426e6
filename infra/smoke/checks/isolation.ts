import { type Check, CheckSkipped, conversationOf, expect } from '../check.js';
import { describe } from '../client.js';

/**
 * The second user sees nothing of the first one's: the user comes from each
 * token (the authorizer's context), never from a cached answer for another.
 * The conversation is the user's thread of one (with themself), so this
 * holds with sharing too; it runs before the sharing check, whose file the
 * second user must see.
 */
export const isolation: Check = {
  name: 'second user sees none of it (404)',
  async run(context) {
    if (!context.other) throw new CheckSkipped('no second user (--token-b)');
    const conversationId = conversationOf(context);
    const paths = [`/v1/conversations/${conversationId}`, ...[...context.made.attachments.keys()].map((id) => `/v1/attachments/${id}`)];
    for (const path of paths) {
      const answer = await context.client.call(context.other.token, 'GET', path);
      expect(answer.status === 404, `GET ${path} as the second user: ${describe(answer)}, not 404`);
    }
    return `${paths.length} resources`;
  },
};
