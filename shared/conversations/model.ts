import type { Groups } from '../auth/groups.js';
import type { Counterpart } from '../dynamo/keys.js';
import type { Page, PageRequest } from '../pagination.js';

export type { Counterpart };

/** A conversation exactly as the API shows it. */
export interface Conversation {
  id: string;
  contact_id: string | null;
  group_id: string | null;
  pinned_message_id: string | null;
  is_pinned: boolean;
  /** Evaluated at the time of the request: a mute whose end has passed reads false. */
  is_muted: boolean;
  /** End of the current mute; null when it has no end or there is none. */
  muted_until: number | null;
  last_active_at: number | null;
  last_opened_at: number | null;
  created_at: number;
  archived_at: number | null;
}

/** Filters of the list; absent means no filtering, and they combine with AND. */
export interface ConversationFilter {
  muted?: boolean;
  archived?: boolean;
  pinned?: boolean;
  unread?: boolean;
  group_id?: string;
  contact_id?: string;
}

/**
 * The order of a list: creation (newest first, the default) or activity
 * (newest activity first; with `pinnedFirst`, the pinned ones first).
 */
export type ListOrder = { by: 'created' } | { by: 'activity'; pinnedFirst: boolean; cursorActiveAt?: number };

/** A mute as stored: none, with no end, or until a time (Unix seconds). */
export type Mute = { kind: 'off' } | { kind: 'forever' } | { kind: 'until'; until: number };

/** Fields a client may change, validated; null clears a field. */
export interface ConversationChanges {
  is_pinned?: boolean;
  mute?: Mute;
  pinned_message_id?: string | null;
  archived_at?: number | null;
  /** Forward only; null clears it (mark as unread). */
  last_opened_at?: number | null;
}

/** A PUT's fields as given, before the rules that depend on the time of the request. */
export interface ConversationUpdate {
  is_pinned?: boolean;
  is_muted?: boolean;
  muted_until?: number | null;
  pinned_message_id?: string | null;
  archived_at?: number | null;
  last_opened_at?: number | null;
}

/** What a list page cost: which index it queried and how many items it read. */
export interface ListCost {
  index: string;
  queries: number;
  itemsRead: number;
}

export interface ConversationStore {
  /** The user's one conversation with this contact or group, created if there is none. */
  findOrCreate(
    userId: string,
    counterpart: Counterpart,
    seed: string | undefined,
    requestId: string,
  ): Promise<{ conversation: Conversation; created: boolean }>;
  get(userId: string, id: string): Promise<Conversation | undefined>;
  /** The conversation as a token with these groups shows it (a large group's side with its thread's activity). */
  shown(userId: string, id: string, groups: Groups): Promise<Conversation | undefined>;
  /**
   * Applies only the given fields in one write (with its event, when it changes what the user sees), answering as `shown`
   * does for these groups; undefined when there is no such conversation.
   */
  update(userId: string, id: string, changes: ConversationChanges, requestId: string, groups: Groups): Promise<Conversation | undefined>;
  /** Removes the conversation and its uniqueness record in one write; false when there was none. */
  remove(userId: string, id: string, requestId: string): Promise<boolean>;
  list(
    userId: string,
    filter: ConversationFilter,
    page: PageRequest,
    order?: ListOrder,
    groups?: Groups,
  ): Promise<{ page: Page<Conversation>; cost: ListCost }>;
  /** The id of the user's conversation with this contact or group, if they hold one. */
  sideOf(userId: string, counterpart: Counterpart): Promise<string | undefined>;
  /** Whether the group's thread is large (docs/api.md, "Sharing", large groups). */
  isLargeThread(groupId: string): Promise<boolean>;
}

export function newConversation(id: string, counterpart: Counterpart, createdAt: number): Conversation {
  return {
    id,
    contact_id: counterpart.kind === 'contact' ? counterpart.id : null,
    group_id: counterpart.kind === 'group' ? counterpart.id : null,
    pinned_message_id: null,
    is_pinned: false,
    is_muted: false,
    muted_until: null,
    last_active_at: null,
    last_opened_at: null,
    created_at: createdAt,
    archived_at: null,
  };
}
