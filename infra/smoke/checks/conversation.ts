import { describe } from '../client.js';
import { expect, type Check } from '../check.js';

/** The first write: the token is accepted, a function runs, DynamoDB takes a transaction. */
export const createConversation: Check = {
  name: 'create a conversation',
  async run(context) {
    const created = await context.client.call(context.user.token, 'POST', '/v1/conversations', { form: { contact_id: `${context.marker}-contact` } });
    if (typeof created.body?.id === 'string') context.made.conversation(created.body.id);
    expect(created.status === 201, `POST /v1/conversations: ${describe(created)}`);
    const read = await context.client.call(context.user.token, 'GET', `/v1/conversations/${created.body.id}`);
    expect(read.status === 200 && read.body?.id === created.body.id, `GET /v1/conversations/${created.body.id}: ${describe(read)}`);
    context.conversationId = created.body.id;
    return created.body.id;
  },
};
