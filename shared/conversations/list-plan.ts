import { conversationIndexes, conversationsTable, type ConversationIndex } from '../dynamo/tables.js';
import { CONVERSATION_SK_PREFIX, contactKey, conversationKey, flagKey, groupKey } from '../dynamo/keys.js';
import type { ListQuery } from '../dynamo/query-page.js';
import type { ConversationFilter } from './model.js';

/**
 * How a filtered list is read: one index whose key matches one filter exactly
 * (so a page reads only matching items), and the other filters applied to what
 * that index returns. Id filters come first (a contact or group has few
 * conversations), then `true` flags (pinned, muted, archived and unread
 * conversations are few), then `false` flags; with no filter, the table itself.
 *
 * `muted` is evaluated at the time of the request, so it is more than a key:
 * `by_muted` holds every stored mute under `true`, including those whose end
 * has passed since. `muted=true` filters those out (`own`: no end, or an end
 * after now); `muted=false` adds them back from `by_mute_end`
 * (`expiredMutes`), whose key condition "end <= now" finds exactly them.
 */
export interface ListPlan {
  index?: { name: string; partitionKey: string; value: string };
  /** What the chosen index's key cannot say: `muted=true` also needs the mute not over by now. */
  own?: Condition;
  /** FilterExpression fragments for the other filters, ANDed. */
  residual: Condition[];
  /** Also merge in the conversations whose mute is over by now: `muted=false` read from `by_muted`. */
  expiredMutes: boolean;
}

/**
 * A FilterExpression fragment with its names and values (placeholders unique
 * within the plan). Fragments are ANDed as they are: an OR inside one has its
 * own parentheses, and nothing else does (DynamoDB refuses redundant ones).
 */
export interface Condition {
  expression: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
}

type Candidate = { index: ConversationIndex; value: string; own?: Condition; residual: Condition };

export function listPlan(userId: string, filter: ConversationFilter, now: number): ListPlan {
  let placeholders = 0;
  const next = () => placeholders++;
  const equals = (attribute: string, stored: unknown): Condition => {
    const n = next();
    return { expression: `#r${n} = :r${n}`, names: { [`#r${n}`]: attribute }, values: { [`:r${n}`]: stored } };
  };
  const mute = (wanted: boolean): Pick<Candidate, 'own' | 'residual'> => {
    const n = next();
    const names = { [`#r${n}k`]: conversationIndexes.muted.partitionKey, [`#r${n}u`]: 'muted_until' };
    const values = { [`:r${n}k`]: flagKey(userId, true), [`:r${n}t`]: now };
    // A mute's end is stored only while it is a timed mute; `muted_until <= now` is one that is over.
    const notOver = `(attribute_not_exists(#r${n}u) OR #r${n}u > :r${n}t)`;
    if (!wanted) return { residual: { expression: `(#r${n}k <> :r${n}k OR #r${n}u <= :r${n}t)`, names, values } };
    return {
      residual: { expression: `#r${n}k = :r${n}k AND ${notOver}`, names, values },
      own: { expression: notOver, names: { [`#r${n}u`]: 'muted_until' }, values: { [`:r${n}t`]: now } },
    };
  };
  const flag = (index: ConversationIndex, wanted: boolean): Candidate => {
    const key = flagKey(userId, wanted);
    if (index === 'muted') return { index, value: key, ...mute(wanted) };
    return { index, value: key, residual: equals(conversationIndexes[index].partitionKey, key) };
  };

  const candidates: Candidate[] = [];
  if (filter.contact_id !== undefined) {
    candidates.push({ index: 'contact', value: contactKey(userId, filter.contact_id), residual: equals('contact_id', filter.contact_id) });
  }
  if (filter.group_id !== undefined) {
    candidates.push({ index: 'group', value: groupKey(userId, filter.group_id), residual: equals('group_id', filter.group_id) });
  }
  const flags: [ConversationIndex, boolean | undefined][] = [
    ['pinned', filter.pinned],
    ['muted', filter.muted],
    ['archived', filter.archived],
    ['unread', filter.unread],
  ];
  for (const wanted of [true, false]) {
    for (const [index, given] of flags) if (given === wanted) candidates.push(flag(index, given));
  }
  const [chosen, ...rest] = candidates;
  if (!chosen) return { residual: [], expiredMutes: false };
  const definition = conversationIndexes[chosen.index];
  return {
    index: { name: definition.name, partitionKey: definition.partitionKey, value: chosen.value },
    ...(chosen.own ? { own: chosen.own } : {}),
    residual: rest.map((candidate) => candidate.residual),
    expiredMutes: chosen.index === 'muted' && filter.muted === false,
  };
}

/** Conditions ANDed into one FilterExpression with their names and values; undefined when there are none. */
export function conjunction(conditions: Condition[]): Condition | undefined {
  if (conditions.length === 0) return undefined;
  return {
    expression: conditions.map((condition) => condition.expression).join(' AND '),
    names: Object.assign({}, ...conditions.map((condition) => condition.names)),
    values: Object.assign({}, ...conditions.map((condition) => condition.values)),
  };
}

/**
 * The Query a plan makes on `table`: the chosen index's key (or the user's
 * conversations in the table itself, strongly consistent), the chosen index's
 * own condition and the residual filters, and how a cursor id becomes the
 * ExclusiveStartKey of that index.
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
  const filter = conjunction([...(plan.own ? [plan.own] : []), ...plan.residual]);
  const { index } = plan;
  return {
    query: {
      TableName: table,
      ...(index ? { IndexName: index.name } : { ConsistentRead: true }),
      KeyConditionExpression: keyCondition,
      ...(filter ? { FilterExpression: filter.expression } : {}),
      ExpressionAttributeNames: { ...names, ...filter?.names },
      ExpressionAttributeValues: { ...values, ...filter?.values },
    },
    startKeyOf: (cursor) => ({ ...conversationKey(userId, cursor), ...(index ? { [index.partitionKey]: index.value } : {}) }),
  };
}
