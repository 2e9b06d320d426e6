import { parameterInvalid } from '../http/errors.js';

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
    throw parameterInvalid('last_opened_at', `last_opened_at must not be more than ${MAX_OPENED_AHEAD_SECONDS} seconds in the future`);
  }
  return lastOpenedAt;
}

/** A write that moves one of the two times: an open, a mark-as-unread, or activity (an upload). */
export type ReadStateWrite = { kind: 'open'; at: number } | { kind: 'clear' } | { kind: 'activity'; at: number };

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
// DynamoDB refuses parentheses that change nothing, so each OR-group carries
// exactly one pair, and every condition can be ANDed as it is.
const NAMES: Record<string, string> = { '#opened': 'last_opened_at', '#active': 'last_active_at' };
const absent = (name: string) => `attribute_not_exists(${name}) OR attribute_type(${name}, :rs_null)`;
const present = (name: string) => `attribute_exists(${name}) AND NOT attribute_type(${name}, :rs_null)`;
const OPENED_BEFORE = `(${absent('#opened')} OR #opened < :rs_at)`;
const ACTIVE_BEFORE = `(${absent('#active')} OR #active < :rs_at)`;

type CaseSpec = Omit<ReadStateCase, 'names' | 'values'>;

/** A case with exactly the names and values its condition uses. */
function withPlaceholders(spec: CaseSpec, at: number | undefined): ReadStateCase {
  const used = (placeholder: string) => new RegExp(`${placeholder}\\b`).test(spec.condition);
  const names = Object.fromEntries(Object.entries(NAMES).filter(([placeholder]) => used(placeholder)));
  const values: Record<string, unknown> = {};
  if (used(':rs_at')) values[':rs_at'] = at;
  if (used(':rs_null')) values[':rs_null'] = 'NULL';
  return { ...spec, names, values };
}

/** The case that holds for the stored times; the cases cover every state (unit-tested), so one always does. */
export function caseHolding(cases: readonly ReadStateCase[], stored: ReadTimes): ReadStateCase {
  const chosen = cases.find((candidate) => candidate.holds(stored));
  // Without one the write would drop the read state.
  if (!chosen) throw new Error(`No read-state case holds for ${JSON.stringify(stored)}`);
  return chosen;
}

/** The cases of a write, the likeliest first (the one tried without reading). */
export function readStateCases(write: ReadStateWrite): ReadStateCase[] {
  return caseSpecs(write).map((spec) => withPlaceholders(spec, write.kind === 'clear' ? undefined : write.at));
}

function caseSpecs(write: ReadStateWrite): CaseSpec[] {
  const before = (time: number | null, at: number) => time === null || time < at;
  switch (write.kind) {
    case 'open': {
      const { at } = write;
      return [
        {
          // Opened after the last activity (or there was none): read.
          condition: `${OPENED_BEFORE} AND (${absent('#active')} OR #active <= :rs_at)`,
          holds: (s) => before(s.last_opened_at, at) && (s.last_active_at === null || s.last_active_at <= at),
          set: { last_opened_at: at },
          remove: [],
          unread: false,
        },
        {
          // Opened, but there has been activity since that time: still unread.
          condition: `${OPENED_BEFORE} AND #active > :rs_at`,
          holds: (s) => before(s.last_opened_at, at) && s.last_active_at !== null && s.last_active_at > at,
          set: { last_opened_at: at },
          remove: [],
          unread: true,
        },
        {
          // A stale device: the stored open is as new or newer. Forward only, so nothing moves.
          condition: '#opened >= :rs_at',
          holds: (s) => !before(s.last_opened_at, at),
          set: {},
          remove: [],
        },
      ];
    }
    case 'clear':
      return [
        {
          condition: present('#active'),
          holds: (s) => s.last_active_at !== null,
          set: {},
          remove: ['last_opened_at'],
          unread: true,
        },
        {
          condition: `(${absent('#active')})`,
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
          condition: `${ACTIVE_BEFORE} AND ${OPENED_BEFORE}`,
          holds: (s) => before(s.last_active_at, at) && before(s.last_opened_at, at),
          set: { last_active_at: at },
          remove: [],
          unread: true,
        },
        {
          // Activity at or before a time the user has already opened it at: read.
          condition: `${ACTIVE_BEFORE} AND #opened >= :rs_at`,
          holds: (s) => before(s.last_active_at, at) && !before(s.last_opened_at, at),
          set: { last_active_at: at },
          remove: [],
          unread: false,
        },
        {
          // Activity never moves back (uploads racing on clocks a second apart).
          condition: '#active >= :rs_at',
          holds: (s) => !before(s.last_active_at, at),
          set: {},
          remove: [],
        },
      ];
    }
  }
}
