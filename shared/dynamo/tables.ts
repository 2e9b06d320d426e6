/**
 * The DynamoDB tables exactly as the code queries them. The local server
 * creates them from this, and the CDK stack declares them from this, so the
 * two cannot disagree.
 */
export interface IndexDefinition {
  name: string;
  partitionKey: string;
  sortKey: string;
}

/**
 * An index of the table's own partitions under another sort key (DynamoDB's
 * local secondary index): written in the same write as the item, read
 * consistently. It can only be made with its table.
 */
export interface LocalIndexDefinition {
  name: string;
  sortKey: string;
}

export interface TableDefinition {
  partitionKey: string;
  sortKey: string;
  indexes: IndexDefinition[];
  localIndexes?: LocalIndexDefinition[];
  timeToLiveAttribute?: string;
  /**
   * A DynamoDB stream of the table's changes, for the cleanup that removes
   * what hangs off a deleted item (functions/cleanup.ts): the keys, or the
   * removed item itself where the key alone does not name what it left; or
   * the new items only, for the events' EventBridge Pipe.
   */
  stream?: 'KEYS_ONLY' | 'OLD_IMAGE' | 'NEW_IMAGE' | 'NEW_AND_OLD_IMAGES';
}

export const conversationIndexes = {
  muted: { name: 'by_muted', partitionKey: 'muted_key', sortKey: 'sk' },
  archived: { name: 'by_archived', partitionKey: 'archived_key', sortKey: 'sk' },
  pinned: { name: 'by_pinned', partitionKey: 'pinned_key', sortKey: 'sk' },
  group: { name: 'by_group', partitionKey: 'group_key', sortKey: 'sk' },
  contact: { name: 'by_contact', partitionKey: 'contact_key', sortKey: 'sk' },
  unread: { name: 'by_unread', partitionKey: 'unread_key', sortKey: 'sk' },
  /** Sparse: only conversations muted until a time; sorted by that time (see conversations/mute.ts). */
  muteEnd: { name: 'by_mute_end', partitionKey: 'mute_end_key', sortKey: 'mute_end_at' },
  /**
   * Every conversation of a user in activity order (activitySort); the
   * uniqueness records have no activity_sort and stay out. `order=activity`.
   */
  activity: { name: 'by_activity', partitionKey: 'pk', sortKey: 'activity_sort' },
  /** The archived (or not archived) conversations of a user in activity order: `order=activity` with `archived`. */
  archivedActivity: { name: 'by_archived_activity', partitionKey: 'archived_key', sortKey: 'activity_sort' },
  /** Every side of a thread, one per user: the fan-out finds a group thread's sides here. */
  thread: { name: 'by_thread', partitionKey: 'thread_key', sortKey: 'pk' },
  /** Sparse: a user's sides of large groups, whose activity is their thread's (shared/conversations/large-threads.ts). */
  large: { name: 'by_large_side', partitionKey: 'large_side_key', sortKey: 'sk' },
} as const satisfies Record<string, IndexDefinition>;

export type ConversationIndex = keyof typeof conversationIndexes;

export const conversationsTable: TableDefinition = {
  partitionKey: 'pk',
  sortKey: 'sk',
  indexes: Object.values(conversationIndexes),
  // A removed conversation's attachments are removed from its stream.
  stream: 'KEYS_ONLY',
};

/** Sorted by attachment id (a ULID), so newest first is descending order in every list. */
export const attachmentIndexes = {
  /** A user's own uploads (the list without conversation_id). */
  uploader: { name: 'by_uploader', partitionKey: 'uploaded_by', sortKey: 'id' },
  /** Every member's attachments of a thread (the list with conversation_id). */
  thread: { name: 'by_thread', partitionKey: 'thread_key', sortKey: 'id' },
  /** The uploader's attachments of one of their sides: what the cleanup of that side removes. */
  conversation: { name: 'by_conversation', partitionKey: 'conversation_key', sortKey: 'id' },
} as const satisfies Record<string, IndexDefinition>;

export const attachmentsTable: TableDefinition = {
  partitionKey: 'pk',
  sortKey: 'sk',
  indexes: Object.values(attachmentIndexes),
  // Only upload intents carry it (shared/dynamo/keys.ts): one whose run died goes, and its REMOVE hands the file to the cleanup.
  timeToLiveAttribute: 'expires_at',
  // The cleanup removes a removed record's file (its key is in the old image); the fan-out reads a new record.
  stream: 'NEW_AND_OLD_IMAGES',
};

/** Idempotency-Key records; DynamoDB's TTL removes them after their 24 hours. */
export const idempotencyTable: TableDefinition = {
  partitionKey: 'pk',
  sortKey: 'sk',
  indexes: [],
  timeToLiveAttribute: 'expires_at',
};

/**
 * Upload sessions (large files straight to S3). DynamoDB's TTL removes a
 * session some time after its expires_at; until then the code itself treats
 * it as expired.
 */
export const uploadSessionsTable: TableDefinition = {
  partitionKey: 'pk',
  sortKey: 'sk',
  indexes: [],
  timeToLiveAttribute: 'expires_at',
  // A removed session's multipart upload and object are removed from its stream, unless an attachment holds
  // them: the upload id and the attachment id are in the item, not in its key.
  stream: 'OLD_IMAGE',
};

/**
 * Each user's feed of events (shared/events/): under the user's partition, the
 * events by sequence number and the counter of the last one taken
 * (shared/dynamo/keys.ts). DynamoDB's TTL removes an event some time after its
 * 30 days; until then the reads leave it out themselves. The stream's new
 * items feed the EventBridge Pipe.
 */
export const eventIndexes = {
  /** A user's events of one type, in feed order (`<type>#<sequence>`): the `type` filter of the feed. */
  type: { name: 'by_type', sortKey: 'type_sort' },
  /** A user's events of one resource, in feed order (`<resource>#<sequence>`): `type=attachment.*`. */
  resource: { name: 'by_resource', sortKey: 'resource_sort' },
} as const satisfies Record<string, LocalIndexDefinition>;

/**
 * The filtered feeds are local indexes, not global ones: read as consistently as
 * the feed and written in the same transaction as the event, so a filtered sync
 * with ending_before misses nothing either, and a page reads at most limit + 1.
 */
export const eventsTable: TableDefinition = {
  partitionKey: 'pk',
  sortKey: 'sk',
  indexes: [],
  localIndexes: Object.values(eventIndexes),
  timeToLiveAttribute: 'expires_at',
  stream: 'NEW_IMAGE',
};

/**
 * The stack's tables by the part each plays, for what sets up or names them
 * all (the local server, its IAM): one list, not one per use.
 */
export const stackTables = {
  conversations: conversationsTable,
  attachments: attachmentsTable,
  idempotency: idempotencyTable,
  uploadSessions: uploadSessionsTable,
  events: eventsTable,
} as const satisfies Record<string, TableDefinition>;

export type TableRole = keyof typeof stackTables;

export const tableRoles = Object.keys(stackTables) as TableRole[];

/** One value per table, by its role: what lists the tables derives its list from stackTables. */
export function byTableRole<T>(of: (role: TableRole) => T): Record<TableRole, T> {
  return Object.fromEntries(tableRoles.map((role) => [role, of(role)])) as Record<TableRole, T>;
}
