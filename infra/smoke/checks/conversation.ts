import { type Check, expect } from '../check.js';
import { describe } from '../client.js';
import { heldConversationWith } from '../held.js';

/**
 * The first write: the token is accepted, a function runs, DynamoDB takes a
 * transaction. The conversation is with the user themself, a thread of one:
 * the files the next checks upload into it reach nobody else (an upload into
 * a conversation with a contact makes the contact a side the run could not
 * remove). One the user held before the run is used and kept.
 */
export const createConversation: Check = {
  name: 'create a conversation',
  async run(context) {
    const { client, user } = context;
    // Without a readable subject the stage refuses the token: the POST below fails and makes nothing.
    const contactId = user.id ?? `${context.marker}-contact`;
    const held = user.id ? await heldConversationWith(context, user, contactId) : undefined;
    if (!held) context.made.contacts.add(contactId);
    const created = await client.call(user.token, 'POST', '/v1/conversations', { form: { contact_id: contactId } });
    if (typeof created.body?.id === 'string' && !held) context.made.conversation(created.body.id);
    expect(created.status === (held ? 200 : 201), `POST /v1/conversations contact_id=${contactId}: ${describe(created)}`);
    const read = await client.call(user.token, 'GET', `/v1/conversations/${created.body.id}`);
    expect(read.status === 200 && read.body?.id === created.body.id, `GET /v1/conversations/${created.body.id}: ${describe(read)}`);
    context.conversationId = created.body.id;
    return held ? `${created.body.id} (the user's own, kept)` : created.body.id;
  },
};
