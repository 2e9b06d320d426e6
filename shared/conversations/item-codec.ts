import { and, type Condition, equals, hasType, notExists, or, type Update } from '../dynamo/expressions.js';
import {
  activitySort,
  type Counterpart,
  contactKey,
  conversationKey,
  flagKey,
  groupKey,
  muteEndKey,
  muteEndSort,
  threadKey,
  threadOf,
} from '../dynamo/keys.js';
import { conversationIndexes } from '../dynamo/tables.js';
import type { Conversation, ConversationChanges, Mute } from './model.js';
import { shownMute } from './mute.js';
import { isUnread, type ReadStateCase, type ReadTimes } from './read-state.js';

export type Item = Record<string, unknown>;

/**
 * A conversation as a DynamoDB item and back: its fields, its key, and the
 * index keys that the lists query (both values of each flag, the sparse
 * group, contact and mute-end keys) and its thread's key (shared/dynamo/keys.ts),
 * kept in step by every write.
 *
 * What is stored is the mute as set (`is_muted`, and `muted_until` for a
 * timed one); what a response shows is that mute evaluated at the time of
 * the request (`fromItem(item, now)`). Absent fields are absent, not NULL:
 * conditions test `attribute_not_exists`.
 */
export function toItem(userId: string, conversation: Conversation): Item {
  const { is_muted: _muted, muted_until: _until, ...plain } = conversation;
  return {
    ...conversationKey(userId, conversation.id),
    ...withoutNulls(plain),
    ...muteAttributes(userId, muteOf(conversation)),
    [conversationIndexes.pinned.partitionKey]: flagKey(userId, conversation.is_pinned),
    [conversationIndexes.archived.partitionKey]: flagKey(userId, conversation.archived_at !== null),
    [conversationIndexes.unread.partitionKey]: flagKey(userId, isUnread(conversation)),
    ...(conversation.group_id ? { [conversationIndexes.group.partitionKey]: groupKey(userId, conversation.group_id) } : {}),
    ...(conversation.contact_id ? { [conversationIndexes.contact.partitionKey]: contactKey(userId, conversation.contact_id) } : {}),
    [conversationIndexes.thread.partitionKey]: threadKey(threadOf(userId, counterpartOf(conversation))),
    [conversationIndexes.activity.sortKey]: activitySort(activeAt(conversation), conversation.id),
  };
}

/** When a conversation was last active: its last activity, or its creation while it has had none. */
export const activeAt = (conversation: Pick<Conversation, 'last_active_at' | 'created_at'>): number =>
  conversation.last_active_at ?? conversation.created_at;

/** Where a stored conversation stands in the activity order (activitySort), from its fields (an item written before the index has no key). */
export const activityPlace = (item: Item): string => {
  const conversation = { ...readTimes(item), created_at: item.created_at as number };
  return activitySort(activeAt(conversation), item.id as string);
};

/** The conversation as a response shows it at `now`. */
export function fromItem(item: Item, now: number): Conversation {
  return {
    id: item.id as string,
    contact_id: orNull(item.contact_id),
    group_id: orNull(item.group_id),
    pinned_message_id: orNull(item.pinned_message_id),
    is_pinned: item.is_pinned === true,
    ...shownMute(storedMute(item), now),
    ...readTimes(item),
    created_at: item.created_at as number,
    archived_at: orNull(item.archived_at),
  };
}

/** Whom a conversation (or its item) is with. */
export function counterpartOf(conversation: { group_id?: unknown; contact_id?: unknown }): Counterpart {
  return typeof conversation.group_id === 'string'
    ? { kind: 'group', id: conversation.group_id }
    : { kind: 'contact', id: typeof conversation.contact_id === 'string' ? conversation.contact_id : '' };
}

export function readTimes(item: Item): ReadTimes {
  return { last_active_at: orNull(item.last_active_at), last_opened_at: orNull(item.last_opened_at) };
}

const orNull = <T>(value: unknown) => (value === undefined || value === null ? null : (value as T));

function withoutNulls(record: Record<string, unknown>): Item {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== null));
}

function storedMute(item: Item): Mute {
  if (item.is_muted !== true) return { kind: 'off' };
  return typeof item.muted_until === 'number' ? { kind: 'until', until: item.muted_until } : { kind: 'forever' };
}

/** The mute a seeded, API-shaped conversation stores (`is_muted` with a past `muted_until` stores an ended mute). */
function muteOf(conversation: Conversation): Mute {
  if (!conversation.is_muted) return { kind: 'off' };
  return conversation.muted_until === null ? { kind: 'forever' } : { kind: 'until', until: conversation.muted_until };
}

/** A mute as attributes: the flag, its by_muted key, and for a timed mute its end, also keyed in by_mute_end. */
function muteAttributes(userId: string, mute: Mute): Item {
  return {
    is_muted: mute.kind !== 'off',
    [conversationIndexes.muted.partitionKey]: flagKey(userId, mute.kind !== 'off'),
    ...(mute.kind === 'until'
      ? {
          muted_until: mute.until,
          [conversationIndexes.muteEnd.partitionKey]: muteEndKey(userId),
          [conversationIndexes.muteEnd.sortKey]: muteEndSort(mute.until),
        }
      : {}),
  };
}
const TIMED_MUTE_ATTRIBUTES = ['muted_until', conversationIndexes.muteEnd.partitionKey, conversationIndexes.muteEnd.sortKey];

/** SET and REMOVE actions of a write (shared/dynamo/expressions.ts renders them), each field keeping its index keys in step. */
export class Changes {
  private readonly set = new Map<string, unknown>();
  private readonly remove = new Set<string>();

  /** The plain fields and the mute of a PUT (read state goes through a ReadStateCase). */
  static of(userId: string, changes: Omit<ConversationChanges, 'last_opened_at'>): Changes {
    const update = new Changes();
    if (changes.is_pinned !== undefined) {
      update.assign('is_pinned', changes.is_pinned).assign(conversationIndexes.pinned.partitionKey, flagKey(userId, changes.is_pinned));
    }
    if (changes.mute !== undefined) {
      for (const [attribute, value] of Object.entries(muteAttributes(userId, changes.mute))) update.assign(attribute, value);
      if (changes.mute.kind !== 'until') for (const attribute of TIMED_MUTE_ATTRIBUTES) update.drop(attribute);
    }
    if (changes.pinned_message_id !== undefined) {
      if (changes.pinned_message_id === null) update.drop('pinned_message_id');
      else update.assign('pinned_message_id', changes.pinned_message_id);
    }
    if (changes.archived_at !== undefined) {
      if (changes.archived_at === null) update.drop('archived_at');
      else update.assign('archived_at', changes.archived_at);
      update.assign(conversationIndexes.archived.partitionKey, flagKey(userId, changes.archived_at !== null));
    }
    return update;
  }

  assign(attribute: string, value: unknown): this {
    this.set.set(attribute, value);
    this.remove.delete(attribute);
    return this;
  }

  drop(attribute: string): this {
    this.remove.add(attribute);
    this.set.delete(attribute);
    return this;
  }

  /**
   * The update of these changes to the user's conversation `conversationId`
   * plus a read-state case: its times, its unread index key and, when it
   * moves the activity, the conversation's place in the activity order (its
   * condition goes with the write's). Undefined when nothing would be written
   * (no fields, and a case that moves nothing).
   */
  with(userId: string, conversationId: string, readState?: ReadStateCase): Update | undefined {
    const set = new Map(this.set);
    const remove = new Set(this.remove);
    if (readState) {
      for (const [attribute, value] of Object.entries(readState.set)) set.set(attribute, value);
      for (const attribute of readState.remove) remove.add(attribute);
      if (readState.unread !== undefined) set.set(conversationIndexes.unread.partitionKey, flagKey(userId, readState.unread));
      // Activity only moves forward and is never removed (read-state.ts): its place moves with it.
      const active = readState.set.last_active_at;
      if (active !== undefined) set.set(conversationIndexes.activity.sortKey, activitySort(active, conversationId));
    }
    if (set.size === 0 && remove.size === 0) return undefined;
    return { set, remove };
  }
}

/** The attributes a conversation's shown fields come from (fromItem): an update that records an event is conditioned on them. */
const SHOWN_ATTRIBUTES = ['is_pinned', 'is_muted', 'muted_until', 'pinned_message_id', 'archived_at', 'last_active_at', 'last_opened_at'];

/** Every shown attribute still as read: the same value, or still absent (or NULL, as older items stored it). */
export function shownAsRead(item: Item): Condition {
  return and(
    ...SHOWN_ATTRIBUTES.map((attribute) =>
      item[attribute] === undefined || item[attribute] === null
        ? or(notExists(attribute), hasType(attribute, 'NULL'))
        : equals(attribute, item[attribute]),
    ),
  );
}

/** The item as an UpdateItem of `update` leaves it. */
export function applied(item: Item, update: Update): Item {
  const after: Item = { ...item };
  const set =
    update.set === undefined
      ? []
      : Symbol.iterator in update.set
        ? [...(update.set as Iterable<readonly [string, unknown]>)]
        : Object.entries(update.set);
  for (const [attribute, value] of set) after[attribute] = value;
  for (const attribute of update.remove ?? []) delete after[attribute];
  return after;
}
