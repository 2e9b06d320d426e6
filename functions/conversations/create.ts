import { httpHandler } from '../../shared/http/handler.js';
import { parameterInvalid, parameterMissing } from '../../shared/http/errors.js';
import { readParams } from '../../shared/http/params.js';
import { formOrJsonBody, groupsOf } from '../../shared/http/request.js';
import { created, ok } from '../../shared/http/response.js';
import { createParams } from '../../shared/conversations/params.js';
import type { Counterpart } from '../../shared/conversations/model.js';

export const handler = httpHandler(async (request, app) => {
  const counterpart = counterpartOf(readParams(formOrJsonBody(request), createParams));
  return app.idempotency.run(request, counterpart, async (seed) => {
    const { conversation, created: isNew } = await app.conversations.createConversation(request.userId, groupsOf(request), counterpart, seed);
    return isNew ? created(conversation) : ok(conversation);
  });
});

function counterpartOf({ contact_id, group_id }: { contact_id?: string; group_id?: string }): Counterpart {
  if (contact_id !== undefined && group_id !== undefined) {
    throw parameterInvalid('group_id', 'Give either contact_id or group_id, not both');
  }
  if (contact_id !== undefined) return { kind: 'contact', id: contact_id };
  if (group_id !== undefined) return { kind: 'group', id: group_id };
  throw parameterMissing('contact_id', 'contact_id or group_id is required');
}
