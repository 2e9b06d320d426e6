import {
  and,
  atMost,
  beginsWith,
  type Expression,
  equals,
  expressions,
  fragment,
  greaterThan,
  notEquals,
  notExists,
  or,
  Placeholders,
  rendered,
} from '../dynamo/expressions.js';
import { CONVERSATION_SK_PREFIX, contactKey, conversationKey, flagKey, groupKey, PARTITION_KEY, SORT_KEY } from '../dynamo/keys.js';
import type { ListQuery } from '../dynamo/query-page.js';
import { type ConversationIndex, conversationIndexes } from '../dynamo/tables.js';
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
 * A FilterExpression fragment with its names and values (placeholders `#r…`,
 * `:r…`, unique within the plan), ANDed with the others as it is.
 */
export type Condition = Expression;

type Candidate = { index: ConversationIndex; value: string; own?: Condition; residual: Condition };

export function listPlan(userId: string, filter: ConversationFilter, now: number): ListPlan {
  const [chosen, ...rest] = candidatesOf(userId, filter, now);
  if (!chosen) return { residual: [], expiredMutes: false };
  return {
    index: indexOf(chosen),
    ...(chosen.own ? { own: chosen.own } : {}),
    residual: rest.map((candidate) => candidate.residual),
    expiredMutes: chosen.index === 'muted' && filter.muted === false,
  };
}

/** Every filter as an index it could be read from, the most selective first (see ListPlan). */
function candidatesOf(userId: string, filter: ConversationFilter, now: number): Candidate[] {
  const placeholders = new Placeholders('r');
  const residual = (attribute: string, stored: unknown): Condition => fragment(equals(attribute, stored), placeholders);
  const mute = (wanted: boolean): Pick<Candidate, 'own' | 'residual'> => {
    const mutedKey = conversationIndexes.muted.partitionKey;
    // A mute's end is stored only while it is a timed mute; `muted_until <= now` is one that is over.
    const notOver = or(notExists('muted_until'), greaterThan('muted_until', now));
    if (!wanted) return { residual: fragment(or(notEquals(mutedKey, flagKey(userId, true)), atMost('muted_until', now)), placeholders) };
    return {
      residual: fragment(and(equals(mutedKey, flagKey(userId, true)), notOver), placeholders),
      own: fragment(notOver, placeholders),
    };
  };
  const flag = (index: ConversationIndex, wanted: boolean): Candidate => {
    const key = flagKey(userId, wanted);
    if (index === 'muted') return { index, value: key, ...mute(wanted) };
    return { index, value: key, residual: residual(conversationIndexes[index].partitionKey, key) };
  };

  const candidates: Candidate[] = [];
  if (filter.contact_id !== undefined) {
    candidates.push({
      index: 'contact',
      value: contactKey(userId, filter.contact_id),
      residual: residual('contact_id', filter.contact_id),
    });
  }
  if (filter.group_id !== undefined) {
    candidates.push({ index: 'group', value: groupKey(userId, filter.group_id), residual: residual('group_id', filter.group_id) });
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
  return candidates;
}

function indexOf(candidate: Candidate): NonNullable<ListPlan['index']> {
  const definition = conversationIndexes[candidate.index];
  return { name: definition.name, partitionKey: definition.partitionKey, value: candidate.value };
}

/**
 * How a list in activity order is read: an index sorted by activity
 * (`ordered`: by_archived_activity when `archived` is given, else
 * by_activity), from which a page reads `limit + 1` matches; or, when a
 * filter names a set that is small by nature (a contact's or a group's
 * conversation, of which the user holds one; the pinned ones), that set's
 * index read whole and ordered in memory (`whole`). The other filters are
 * residual, as in listPlan. The activity indexes hold no mute state at all,
 * so `muted` is always a residual here, evaluated at `now` like every other.
 */
export interface ActivityPlan {
  kind: 'ordered' | 'whole';
  index: NonNullable<ListPlan['index']>;
  residual: Condition[];
}

export function activityPlan(userId: string, filter: ConversationFilter, now: number): ActivityPlan {
  const candidates = candidatesOf(userId, filter, now);
  const residualBut = (chosen?: Candidate) => candidates.filter((candidate) => candidate !== chosen).map((candidate) => candidate.residual);
  const small = candidates.find(
    (candidate) => candidate.index === 'contact' || candidate.index === 'group' || (candidate.index === 'pinned' && filter.pinned === true),
  );
  if (small) return { kind: 'whole', index: indexOf(small), residual: residualBut(small) };
  const archived = candidates.find((candidate) => candidate.index === 'archived');
  if (archived) {
    const { name, partitionKey } = conversationIndexes.archivedActivity;
    return { kind: 'ordered', index: { name, partitionKey, value: archived.value }, residual: residualBut(archived) };
  }
  const { name, partitionKey } = conversationIndexes.activity;
  return { kind: 'ordered', index: { name, partitionKey, value: userId }, residual: residualBut() };
}

/** Conditions ANDed into one FilterExpression with their names and values; undefined when there are none. */
export function conjunction(conditions: Condition[]): Condition | undefined {
  if (conditions.length === 0) return undefined;
  return fragment(and(...conditions.map(rendered)), new Placeholders('r'));
}

/**
 * The Query a plan makes on `table`: the chosen index's key (or the user's
 * conversations in the table itself, strongly consistent), the chosen index's
 * own condition and the residual filters, and how a cursor id becomes the
 * ExclusiveStartKey of that index.
 */
export function listQuery(
  table: string,
  userId: string,
  plan: ListPlan,
): { query: ListQuery; startKeyOf: (cursor: string) => Record<string, unknown> } {
  const { index } = plan;
  const keyCondition = index
    ? equals(index.partitionKey, index.value)
    : and(equals(PARTITION_KEY, userId), beginsWith(SORT_KEY, CONVERSATION_SK_PREFIX));
  const filter = conjunction([...(plan.own ? [plan.own] : []), ...plan.residual]);
  return {
    query: {
      TableName: table,
      ...(index ? { IndexName: index.name } : { ConsistentRead: true }),
      ...expressions({ keyCondition, ...(filter ? { filter: rendered(filter) } : {}) }),
    },
    startKeyOf: (cursor) => ({ ...conversationKey(userId, cursor), ...(index ? { [index.partitionKey]: index.value } : {}) }),
  };
}
