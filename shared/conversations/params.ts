import { clientId, flag, nullable, timestamp } from '../http/params.js';
import { isConversationId } from '../ids.js';
import { cursor, limit } from '../pagination.js';

/** The parameters each conversation endpoint accepts, and how each is read. */
export const listParams = {
  limit,
  starting_after: cursor(isConversationId),
  ending_before: cursor(isConversationId),
  muted: flag,
  archived: flag,
  pinned: flag,
  unread: flag,
  group_id: clientId,
  contact_id: clientId,
};

export const createParams = { contact_id: clientId, group_id: clientId };

export const updateParams = {
  is_pinned: flag,
  is_muted: flag,
  muted_until: nullable(timestamp),
  pinned_message_id: nullable(clientId),
  archived_at: nullable(timestamp),
  last_opened_at: nullable(timestamp),
};
