import { conversationIndexes, conversationsTable, type ConversationIndex } from '../dynamo/tables.js';
import { CONVERSATION_SK_PREFIX, contactKey, conversationKey, flagKey, groupKey } from '../dynamo/keys.js';
import type { ListQuery } from '../dynamo/query-page.js';
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

/**
 * The Query a plan makes on `table`: the chosen index's key (or the user's
 * conversations in the table itself, strongly consistent), the residual
 * filters, and how a cursor id becomes the ExclusiveStartKey of that index.
 */
export function listQuery(table: string, userId: string, plan: ListPlan): { query: ListQuery; startKeyOf: (cursor: string) => Record<string, unknown> } {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  let keyCondition: string;
  if (plan.index) {
    names['#key'] = plan.index.partitionKey;
    values[':key'] = plan.index.value;
    keyCondition = '#key = :key';
  } else {
    names['#pk'] = conversationsTable.partitionKey;
    names['#sk'] = conversationsTable.sortKey;
    values[':user'] = userId;
    values[':prefix'] = CONVERSATION_SK_PREFIX;
    keyCondition = '#pk = :user AND begins_with(#sk, :prefix)';
  }
  const residual = Object.entries(plan.residual).map(([attribute, value], index) => {
    names[`#f${index}`] = attribute;
    values[`:f${index}`] = value;
    return `#f${index} = :f${index}`;
  });
  const { index } = plan;
  return {
    query: {
      TableName: table,
      ...(index ? { IndexName: index.name } : { ConsistentRead: true }),
      KeyConditionExpression: keyCondition,
      ...(residual.length > 0 ? { FilterExpression: residual.join(' AND ') } : {}),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
    startKeyOf: (cursor) => ({ ...conversationKey(userId, cursor), ...(index ? { [index.partitionKey]: index.value } : {}) }),
  };
}
