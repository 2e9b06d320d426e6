import { randomUUID } from 'node:crypto';
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unlessConditionFails } from '../dynamo/errors.js';
import { and, beginsWith, equals, expressions, itemAbsent, itemExists } from '../dynamo/expressions.js';
import { BATCH_WRITE_MAX, batchWriteAll } from '../dynamo/batch-write.js';
import { ATTACHMENT_SK_PREFIX, attachmentConversationKey, attachmentKey, orphanFileKey, PARTITION_KEY, SORT_KEY } from '../dynamo/keys.js';
import { ConversationActivity, transactWithActivity } from '../conversations/activity.js';
import { ConcurrentWrite, requestToken, transactWrite } from '../dynamo/transactions.js';
import { queryPage } from '../dynamo/query-page.js';
import { attachmentIndexes } from '../dynamo/tables.js';
import type { Page, PageRequest } from '../pagination.js';
import type { AttachmentFilter, AttachmentRecord, AttachmentStore } from './model.js';

type Item = Record<string, unknown>;

const CONVERSATION_INDEX = attachmentIndexes.conversation;
/** Attachment records removed together with their conversation, per BatchWriteItem (its limit). */

/**
 * Attachment records under the user's partition, sort key = attachment id
 * (a ULID, so newest first is descending key order). Attachments in a
 * conversation are also indexed by (user, conversation).
 */
export class DynamoAttachmentStore implements AttachmentStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly table: string,
    /** The conversations' table: an upload into a conversation checks it and marks it active in the same transaction. */
    private readonly conversationsTable: string,
  ) {}

  /**
   * The record, and when it belongs to a conversation the conversation's
   * activity (last_active_at and its unread key, see ConversationActivity),
   * in one transaction on the condition that the conversation exists: an
   * upload racing its conversation's DELETE either commits before it (and
   * the cleanup of that conversation removes it) or finds the conversation
   * gone, never in between. The token (a digest of the transaction) makes
   * the SDK's retry after a lost answer a no-op.
   */
  async add(userId: string, record: AttachmentRecord, at: number): Promise<'added' | 'existed' | 'conversation-missing'> {
    const put = { Put: { TableName: this.table, Item: attachmentItem(userId, record), ...expressions({ condition: itemAbsent() }) } };
    const activity = record.conversation_id
      ? new ConversationActivity(this.client, this.conversationsTable, userId, record.conversation_id, at)
      : undefined;
    const outcome = await transactWithActivity(this.client, [put], activity, (attempt) => requestToken('upload', randomUUID(), attempt));
    if (outcome === 'conversation-missing') return outcome;
    // The record exists: its id is this upload's own (new, or its Idempotency-Key's seed), so an earlier run of it wrote it.
    return outcome.committed ? 'added' : 'existed';
  }

  async get(userId: string, id: string): Promise<AttachmentRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.table, Key: attachmentKey(userId, id), ConsistentRead: true }),
    );
    return Item ? fromItem(Item) : undefined;
  }

  async rename(userId: string, id: string, filename: string): Promise<AttachmentRecord | undefined> {
    const renamed = await unlessConditionFails(
      this.client.send(
        new UpdateCommand({
          TableName: this.table,
          Key: attachmentKey(userId, id),
          ...expressions({ update: { set: { filename } }, condition: itemExists() }),
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    return renamed?.Attributes ? fromItem(renamed.Attributes) : undefined;
  }

  /**
   * Removes the record in one write; its file goes from the table's stream
   * (functions/cleanup.ts). A transaction for its token (from the API
   * request): the SDK's retry of a delete whose answer was lost is a no-op
   * that answers success, not a failed condition read as "there was none".
   */
  async remove(userId: string, id: string, requestId: string): Promise<boolean> {
    const outcome = await transactWrite(
      this.client,
      [{ Delete: { TableName: this.table, Key: attachmentKey(userId, id), ...expressions({ condition: itemExists() }) } }],
      requestToken('delete-attachment', userId, id, requestId),
    );
    if (outcome.committed) return true;
    if (outcome.conflict) throw new ConcurrentWrite();
    return false;
  }

  /** Exactly limit + 1 items are read: the extra one only tells whether there are more. */
  async list(userId: string, filter: AttachmentFilter, page: PageRequest): Promise<Page<AttachmentRecord>> {
    const byConversation =
      filter.conversation_id === undefined ? undefined : attachmentConversationKey(userId, filter.conversation_id);
    const { page: items } = await queryPage(
      this.client,
      byConversation
        ? {
            TableName: this.table,
            IndexName: CONVERSATION_INDEX.name,
            ...expressions({ keyCondition: equals(CONVERSATION_INDEX.partitionKey, byConversation) }),
          }
        : {
            TableName: this.table,
            ConsistentRead: true,
            ...expressions({ keyCondition: usersRecords(userId) }),
          },
      page,
      (cursor) => ({ ...attachmentKey(userId, cursor), ...(byConversation ? { [CONVERSATION_INDEX.partitionKey]: byConversation } : {}) }),
    );
    return { has_more: items.has_more, data: items.data.map(fromItem) };
  }

  /**
   * Hands a file to the cleanup (see ORPHAN_FILE_SK_PREFIX): one put and one
   * delete of its marker, each idempotent. Throws when DynamoDB does.
   */
  async handOverOrphanFile(userId: string, attachmentId: string): Promise<void> {
    const Key = orphanFileKey(userId, attachmentId);
    await this.client.send(new PutCommand({ TableName: this.table, Item: Key }));
    await this.client.send(new DeleteCommand({ TableName: this.table, Key }));
  }

  /**
   * Removes every record of a conversation (after the conversation itself is
   * gone, from its stream). Read from the table, not the by_conversation
   * index: an index is eventually consistent and could miss an attachment
   * committed just before the conversation's delete; a strongly consistent
   * Query of the user's partition cannot. Pages of 25 deletes, each
   * idempotent, so a retry of the whole cleanup is harmless.
   */
  async removeAllOf(userId: string, conversationId: string): Promise<number> {
    let removed = 0;
    let startKey: Item | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.table,
          ConsistentRead: true,
          ...expressions({ keyCondition: usersRecords(userId), filter: equals('conversation_id', conversationId), projection: [PARTITION_KEY, SORT_KEY] }),
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      const keys = (page.Items ?? []) as Item[];
      for (let start = 0; start < keys.length; start += BATCH_WRITE_MAX) {
        const batch = keys.slice(start, start + BATCH_WRITE_MAX).map((Key) => ({ DeleteRequest: { Key } }));
        await batchWriteAll(this.client, this.table, batch);
      }
      removed += keys.length;
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return removed;
  }
}

/** The user's attachment records in the table (not the orphan-file markers beside them). */
const usersRecords = (userId: string) => and(equals(PARTITION_KEY, userId), beginsWith(SORT_KEY, ATTACHMENT_SK_PREFIX));

/** The attachment as stored; the upload sessions' completing transaction writes the same item. */
export function attachmentItem(userId: string, record: AttachmentRecord): Item {
  return {
    ...attachmentKey(userId, record.id),
    ...record,
    ...(record.conversation_id
      ? { [CONVERSATION_INDEX.partitionKey]: attachmentConversationKey(userId, record.conversation_id) }
      : {}),
  };
}

function fromItem(item: Item): AttachmentRecord {
  const orNull = (value: unknown) => (value === undefined || value === null ? null : (value as string));
  return {
    id: item.id as string,
    message_id: orNull(item.message_id),
    conversation_id: orNull(item.conversation_id),
    filename: item.filename as string,
    file_type: item.file_type as string,
    file_size: item.file_size as number,
    created_at: item.created_at as number,
  };
}
