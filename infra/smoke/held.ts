import { expect, type SmokeContext, type SmokeUser } from './check.js';
import { type Answer, describe } from './client.js';

/**
 * The holder's conversation with this contact, if they hold one. A
 * conversation a user held before the run is theirs: the run uses it and
 * never deletes it; one they did not hold is the run's to remove.
 */
export async function heldConversationWith(context: SmokeContext, holder: SmokeUser, contactId: string): Promise<string | undefined> {
  const answer = await conversationsWith(context, holder, contactId);
  return answer.body.data[0]?.id;
}

/** GET /v1/conversations?contact_id=…, with more filters (`&unread=true`); anything but 200 fails the check. */
export async function conversationsWith(context: SmokeContext, holder: SmokeUser, contactId: string, filters = ''): Promise<Answer> {
  const path = `/v1/conversations?contact_id=${encodeURIComponent(contactId)}${filters}`;
  const answer = await context.client.call(holder.token, 'GET', path);
  expect(answer.status === 200, `GET ${path} as ${holder.label}: ${describe(answer)}`);
  return answer;
}
