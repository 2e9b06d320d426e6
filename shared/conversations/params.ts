import { parameterInvalid } from '../http/errors.js';
import { clientId, flag, nullable, type ParamParser, timestamp } from '../http/params.js';
import { isConversationId } from '../ids.js';
import { cursor, limit } from '../pagination.js';
import type { ListOrder } from './model.js';

const ORDERS = ['created', 'activity'] as const;

const orderName: ParamParser<(typeof ORDERS)[number]> = (value, name) => {
  const found = ORDERS.find((order) => order === value);
  if (found) return found;
  throw parameterInvalid(name, `${name} must be one of ${ORDERS.join(', ')}`);
};

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
  order: orderName,
  pinned_first: flag,
  cursor_active_at: timestamp,
};

/**
 * The order a list asks for. `pinned_first` orders by activity too, so it
 * needs `order=activity`; `cursor_active_at` is the activity time of the
 * cursor's conversation as the client holds it, so it needs a cursor and
 * that order.
 */
export function listOrder(params: {
  order?: string;
  pinned_first?: boolean;
  cursor_active_at?: number;
  starting_after?: string;
  ending_before?: string;
}): ListOrder {
  const byActivity = params.order === 'activity';
  if (params.pinned_first === true && !byActivity) throw parameterInvalid('pinned_first', 'pinned_first needs order=activity');
  if (params.cursor_active_at !== undefined) {
    if (!byActivity) throw parameterInvalid('cursor_active_at', 'cursor_active_at needs order=activity');
    if (params.starting_after === undefined && params.ending_before === undefined) {
      throw parameterInvalid(
        'cursor_active_at',
        'cursor_active_at needs starting_after or ending_before: it is the activity time of that conversation as you hold it',
      );
    }
  }
  if (!byActivity) return { by: 'created' };
  return {
    by: 'activity',
    pinnedFirst: params.pinned_first === true,
    ...(params.cursor_active_at === undefined ? {} : { cursorActiveAt: params.cursor_active_at }),
  };
}

export const createParams = { contact_id: clientId, group_id: clientId };

export const updateParams = {
  is_pinned: flag,
  is_muted: flag,
  muted_until: nullable(timestamp),
  pinned_message_id: nullable(clientId),
  archived_at: nullable(timestamp),
  last_opened_at: nullable(timestamp),
};
