import { conversations } from '../../shared/app.js';
import type { Counterpart } from '../../shared/conversations/model.js';
import { createParams } from '../../shared/conversations/params.js';
import { parameterInvalid, parameterMissing } from '../../shared/http/errors.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { readParams } from '../../shared/http/params.js';
import { formOrJsonBody } from '../../shared/http/request.js';
import { created, ok } from '../../shared/http/response.js';
import { CreateConversation } from '../../shared/routes.js';

export const handler = httpHandler(CreateConversation, {
  input: (request) => counterpartOf(readParams(formOrJsonBody(request), createParams)),
  run: async (counterpart, request, composition) => {
    const { conversation, created: isNew } = await composition
      .use(conversations)
      .createConversation(request.caller, counterpart, request.seed);
    return isNew ? created(conversation) : ok(conversation);
  },
});

function counterpartOf({ contact_id, group_id }: { contact_id?: string; group_id?: string }): Counterpart {
  if (contact_id !== undefined && group_id !== undefined) {
    throw parameterInvalid('group_id', 'Give either contact_id or group_id, not both');
  }
  if (contact_id !== undefined) return { kind: 'contact', id: contact_id };
  if (group_id !== undefined) return { kind: 'group', id: group_id };
  throw parameterMissing('contact_id', 'contact_id or group_id is required');
}
