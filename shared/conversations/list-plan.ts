import { conversationIndexes, type ConversationIndex } from '../dynamo/tables.js';
import { contactKey, flagKey, groupKey } from '../dynamo/keys.js';
import type { ConversationFilter } from './model.js';

/**
 * How a filtered list is read: one index whose key matches one filter exactly
 * (so a page reads only matching items), and the other filters applied to what
 * that index returns. Id filters come first (a contact or group has few
 * conversations), then `true` flags (pinned, muted and archived conversations
 * are few), then `false` flags; with no filter, the table itself.
 */
export interface ListPlan {
  index?: { name: string; partitionKey: string; value: string };
  /** Filters left for a FilterExpression, as attribute name → required value. */
  residual: Record<string, string | boolean>;
}

type Candidate = { index: ConversationIndex; value: string; residual: [string, string | boolean] };

export function listPlan(userId: string, filter: ConversationFilter): ListPlan {
  const candidates: Candidate[] = [];
  if (filter.contact_id !== undefined) {
    candidates.push({ index: 'contact', value: contactKey(userId, filter.contact_id), residual: ['contact_id', filter.contact_id] });
  }
  if (filter.group_id !== undefined) {
    candidates.push({ index: 'group', value: groupKey(userId, filter.group_id), residual: ['group_id', filter.group_id] });
  }
  const flags: [ConversationIndex, boolean | undefined][] = [
    ['pinned', filter.pinned],
    ['muted', filter.muted],
    ['archived', filter.archived],
  ];
  for (const wanted of [true, false]) {
    for (const [index, value] of flags) {
      if (value === wanted) {
        candidates.push({ index, value: flagKey(userId, value), residual: [conversationIndexes[index].partitionKey, flagKey(userId, value)] });
      }
    }
  }
  const [chosen, ...rest] = candidates;
  if (!chosen) return { residual: {} };
  const definition = conversationIndexes[chosen.index];
  return {
    index: { name: definition.name, partitionKey: definition.partitionKey, value: chosen.value },
    residual: Object.fromEntries(rest.map((candidate) => candidate.residual)),
  };
}
