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

export interface TableDefinition {
  partitionKey: string;
  sortKey: string;
  indexes: IndexDefinition[];
  timeToLiveAttribute?: string;
  /**
   * A DynamoDB stream of the table's changes, for the cleanup that removes
   * what hangs off a deleted item (functions/cleanup.ts): the keys, or the
   * removed item itself where the key alone does not name what it left.
   */
  stream?: 'KEYS_ONLY' | 'OLD_IMAGE' | 'NEW_AND_OLD_IMAGES';
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
  /** Every side of a thread, one per user: the fan-out finds a group thread's sides here. */
  thread: { name: 'by_thread', partitionKey: 'thread_key', sortKey: 'pk' },
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
