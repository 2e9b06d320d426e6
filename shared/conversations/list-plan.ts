import { conversationIndexes, type ConversationIndex } from '../dynamo/tables.js';
import { contactKey, flagKey, groupKey } from '../dynamo/keys.js';
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
 * has passed since. `muted=true` filters those out (`muted_until > now`);
 * `muted=false` adds them back from `by_mute_end` (`expiredMutes`), whose
 * key condition "end <= now" finds exactly them.
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
 * A FilterExpression fragment; its placeholders are unique within the plan.
 * Fragments are ANDed as they are: an OR inside one has its own parentheses,
 * and nothing else does (DynamoDB refuses redundant parentheses).
 */
export interface Condition {
  expression: string;
  values: Record<string, unknown>;
}

type Candidate = { index: ConversationIndex; value: string; own?: Condition; residual: Condition };

export function listPlan(userId: string, filter: ConversationFilter, now: number): ListPlan {
  let placeholders = 0;
  const equals = (attribute: string, stored: unknown): Condition => {
    const { name, values } = value(stored);
    return { expression: `${attribute} = ${name}`, values };
  };
  function value(stored: unknown) {
    const name = `:r${placeholders++}`;
    return { name, values: { [name]: stored } };
  }
  // A mute's end is stored only while it is a timed mute; `muted_until <= now` is one that is over.
  const notOver = (at: string) => `(attribute_not_exists(muted_until) OR muted_until > ${at})`;
  const flag = (index: ConversationIndex, wanted: boolean): Candidate => {
    const key = flagKey(userId, wanted);
    if (index !== 'muted') return { index, value: key, residual: equals(conversationIndexes[index].partitionKey, key) };
    const [muted, at] = [value(flagKey(userId, true)), value(now)];
    const values = { ...muted.values, ...at.values };
    return {
      index,
      value: key,
      residual: wanted
        ? { expression: `muted_key = ${muted.name} AND ${notOver(at.name)}`, values }
        : { expression: `(muted_key <> ${muted.name} OR muted_until <= ${at.name})`, values },
      ...(wanted ? { own: { expression: notOver(at.name), values: at.values } } : {}),
    };
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
