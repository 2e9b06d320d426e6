import { InvalidParameter } from '../domain-errors.js';
import {
  and,
  atLeast,
  atMost,
  type Condition,
  equals,
  exists,
  fragment,
  greaterThan,
  hasType,
  lessThan,
  not,
  notExists,
  or,
  Placeholders,
  rendered,
} from '../dynamo/expressions.js';

/**
 * Read state: a conversation is unread when it has activity the user has not
 * opened, i.e. `last_active_at` is set and `last_opened_at` is null or earlier.
 */
export interface ReadTimes {
  last_active_at: number | null;
  last_opened_at: number | null;
}

export function isUnread({ last_active_at, last_opened_at }: ReadTimes): boolean {
  return last_active_at !== null && (last_opened_at === null || last_opened_at < last_active_at);
}

/** A device's clock may run a little ahead of ours; further than this is a client bug. */
export const MAX_OPENED_AHEAD_SECONDS = 60;

/** `last_opened_at` as a PUT gives it: a time not too far ahead, or null (mark as unread). */
export function requestedOpen(lastOpenedAt: number | null | undefined, now: number): number | null | undefined {
  if (typeof lastOpenedAt === 'number' && lastOpenedAt > now + MAX_OPENED_AHEAD_SECONDS) {
    throw new InvalidParameter('last_opened_at', `last_opened_at must not be more than ${MAX_OPENED_AHEAD_SECONDS} seconds in the future`);
  }
  return lastOpenedAt;
}

/**
 * A write that moves the times: an open, a mark-as-unread, another member's
 * activity (an upload reaching this side), or the user's own upload (active
 * and read at once: nobody has unread news of their own upload).
 */
export type ReadStateWrite =
  | { kind: 'open'; at: number }
  | { kind: 'clear' }
  | { kind: 'activity'; at: number }
  | { kind: 'own-upload'; at: number };

/** One case of a read-state write; why writes are split into cases: docs/decisions.md, "Read state". */
export interface ReadStateCase {
  /** ConditionExpression over the stored times; safe to AND with another condition as it is. */
  condition: string;
  /** The names and values the condition uses (DynamoDB refuses unused ones). */
  names: Record<string, string>;
  values: Record<string, unknown>;
  /** The same condition, evaluated on a state read back, to choose the case to try next. */
  holds(stored: ReadTimes): boolean;
  set: Record<string, number>;
  remove: string[];
  /** Unread afterwards; undefined when this case leaves both times (and so the flag) as they are. */
  unread?: boolean;
}

// Absent, or stored as NULL (items written before these fields were kept absent).
const OPENED = 'last_opened_at';
const ACTIVE = 'last_active_at';
const absent = (attribute: string) => or(notExists(attribute), hasType(attribute, 'NULL'));
const present = (attribute: string) => and(exists(attribute), not(hasType(attribute, 'NULL')));
const before = (attribute: string, at: number) => or(absent(attribute), lessThan(attribute, at));

type CaseSpec = Omit<ReadStateCase, 'condition' | 'names' | 'values'> & { when: Condition };

/** A case with its condition rendered under placeholders of its own (`#rs…`, `:rs…`), so it ANDs with any other. */
function withPlaceholders({ when, ...spec }: CaseSpec): ReadStateCase {
  const { expression, names, values } = fragment(when, new Placeholders('rs'));
  return { ...spec, condition: expression, names, values };
}

/** A case's condition, to AND with the condition of the write that carries it. */
export const caseCondition = (chosen: ReadStateCase): Condition =>
  rendered({ expression: chosen.condition, names: chosen.names, values: chosen.values });

/** The case that holds for the stored times; the cases cover every state (unit-tested), so one always does. */
export function caseHolding(cases: readonly ReadStateCase[], stored: ReadTimes): ReadStateCase {
  const chosen = cases.find((candidate) => candidate.holds(stored));
  // Without one the write would drop the read state.
  if (!chosen) throw new Error(`No read-state case holds for ${JSON.stringify(stored)}`);
  return chosen;
}

/** The cases of a write, the likeliest first (the one tried without reading). */
export function readStateCases(write: ReadStateWrite): ReadStateCase[] {
  return caseSpecs(write).map(withPlaceholders);
}

function caseSpecs(write: ReadStateWrite): CaseSpec[] {
  const earlier = (time: number | null, at: number) => time === null || time < at;
  switch (write.kind) {
    case 'open': {
      const { at } = write;
      return [
        {
          // Opened after the last activity (or there was none): read.
          when: and(before(OPENED, at), or(absent(ACTIVE), atMost(ACTIVE, at))),
          holds: (s) => earlier(s.last_opened_at, at) && (s.last_active_at === null || s.last_active_at <= at),
          set: { last_opened_at: at },
          remove: [],
          unread: false,
        },
        {
          // Opened, but there has been activity since that time: still unread.
          when: and(before(OPENED, at), greaterThan(ACTIVE, at)),
          holds: (s) => earlier(s.last_opened_at, at) && s.last_active_at !== null && s.last_active_at > at,
          set: { last_opened_at: at },
          remove: [],
          unread: true,
        },
        {
          // A stale device: the stored open is as new or newer. Forward only, so nothing moves.
          when: atLeast(OPENED, at),
          holds: (s) => !earlier(s.last_opened_at, at),
          set: {},
          remove: [],
        },
      ];
    }
    case 'clear':
      return [
        {
          when: present(ACTIVE),
          holds: (s) => s.last_active_at !== null,
          set: {},
          remove: ['last_opened_at'],
          unread: true,
        },
        {
          when: absent(ACTIVE),
          holds: (s) => s.last_active_at === null,
          set: {},
          remove: ['last_opened_at'],
          unread: false,
        },
      ];
    case 'activity': {
      const { at } = write;
      return [
        {
          when: and(before(ACTIVE, at), before(OPENED, at)),
          holds: (s) => earlier(s.last_active_at, at) && earlier(s.last_opened_at, at),
          set: { last_active_at: at },
          remove: [],
          unread: true,
        },
        {
          // Activity at or before a time the user has already opened it at: read.
          when: and(before(ACTIVE, at), atLeast(OPENED, at)),
          holds: (s) => earlier(s.last_active_at, at) && !earlier(s.last_opened_at, at),
          set: { last_active_at: at },
          remove: [],
          unread: false,
        },
        {
          // Activity never moves back (uploads racing on clocks a second apart).
          when: atLeast(ACTIVE, at),
          holds: (s) => !earlier(s.last_active_at, at),
          set: {},
          remove: [],
        },
      ];
    }
    case 'own-upload': {
      // Both times move forward to `at`, each only if it is earlier; read afterwards unless newer activity stays unopened.
      const { at } = write;
      return [
        {
          when: and(before(ACTIVE, at), before(OPENED, at)),
          holds: (s) => earlier(s.last_active_at, at) && earlier(s.last_opened_at, at),
          set: { last_active_at: at, last_opened_at: at },
          remove: [],
          unread: false,
        },
        {
          when: and(before(ACTIVE, at), atLeast(OPENED, at)),
          holds: (s) => earlier(s.last_active_at, at) && !earlier(s.last_opened_at, at),
          set: { last_active_at: at },
          remove: [],
          unread: false,
        },
        {
          // Someone's newer activity is stored and was not opened: opening up to `at` leaves it unread.
          when: and(greaterThan(ACTIVE, at), before(OPENED, at)),
          holds: (s) => s.last_active_at !== null && s.last_active_at > at && earlier(s.last_opened_at, at),
          set: { last_opened_at: at },
          remove: [],
          unread: true,
        },
        {
          when: and(equals(ACTIVE, at), before(OPENED, at)),
          holds: (s) => s.last_active_at === at && earlier(s.last_opened_at, at),
          set: { last_opened_at: at },
          remove: [],
          unread: false,
        },
        {
          when: and(atLeast(ACTIVE, at), atLeast(OPENED, at)),
          holds: (s) => !earlier(s.last_active_at, at) && !earlier(s.last_opened_at, at),
          set: {},
          remove: [],
        },
      ];
    }
  }
}
