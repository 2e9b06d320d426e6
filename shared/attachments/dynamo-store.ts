import { DeleteCommand, GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unlessConditionFails } from '../dynamo/errors.js';
import { and, equals, expressions, itemAbsent, itemExists } from '../dynamo/expressions.js';
import { BATCH_WRITE_MAX, batchWriteAll } from '../dynamo/batch-write.js';
import { attachmentConversationKey, attachmentKey, orphanFileKey, threadKey, threadOf, type Counterpart } from '../dynamo/keys.js';
import { ConversationActivity, transactWithActivity } from '../conversations/activity.js';
import { ConcurrentWrite, requestToken, transactWrite } from '../dynamo/transactions.js';
import { keysUnder, queryPage } from '../dynamo/query-page.js';
import { attachmentIndexes, type IndexDefinition } from '../dynamo/tables.js';
import type { Page, PageRequest } from '../pagination.js';
import type { AttachmentRecord, AttachmentStore, NotOwner } from './model.js';

type Item = Record<string, unknown>;

/** The attribute that names the uploader: only they rename or remove a record. */
const UPLOADER = attachmentIndexes.uploader.partitionKey;

/**
 * Attachment records keyed by their id alone (shared/dynamo/keys.ts), so
 * anyone who may read one finds it with one GetItem. Lists read indexes: the
 * uploader's own uploads (by_uploader), a thread's (by_thread), and the
 * uploader's uploads into one side, for that side's cleanup (by_conversation).
 */
export class DynamoAttachmentStore implements AttachmentStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly table: string,
    /** The conversations' table: an upload into a conversation checks it and marks it active in the same transaction. */
    private readonly conversationsTable: string,
  ) {}

  /**
   * The record, and when it goes into a conversation the uploader's activity
   * on that side (its own upload: active and read at once, see
   * ConversationActivity), in one transaction on the condition that the side
   * exists: an upload racing its conversation's DELETE either commits before
   * it (and the cleanup of that conversation removes it) or finds the
   * conversation gone, never in between. The token (this run's file key is
   * unique to the run) makes the SDK's retry after a lost answer a no-op.
   */
  async add(record: AttachmentRecord): Promise<'added' | 'existed' | 'conversation-missing'> {
    const put = { Put: { TableName: this.table, Item: attachmentItem(record), ...expressions({ condition: itemAbsent() }) } };
    const activity = record.placement
      ? new ConversationActivity(this.client, this.conversationsTable, record.uploaded_by, record.placement.conversation_id, { kind: 'own-upload', at: record.created_at })
      : undefined;
    const outcome = await transactWithActivity(this.client, [put], activity, (attempt) => requestToken('upload', record.file_key, attempt));
    if (outcome === 'conversation-missing') return outcome;
    // The record exists: its id is this upload's own (new, or its Idempotency-Key's seed), so an earlier run of it wrote it.
    return outcome.committed ? 'added' : 'existed';
  }

  async get(id: string): Promise<AttachmentRecord | undefined> {
    const { Item } = await this.client.send(new GetCommand({ TableName: this.table, Key: attachmentKey(id), ConsistentRead: true }));
    return Item ? fromItem(Item) : undefined;
  }

  async rename(uploaderId: string, id: string, filename: string): Promise<AttachmentRecord | NotOwner | undefined> {
    const renamed = await unlessConditionFails(
      this.client.send(
        new UpdateCommand({
          TableName: this.table,
          Key: attachmentKey(id),
          ...expressions({ update: { set: { filename } }, condition: uploadedBy(uploaderId) }),
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    return renamed?.Attributes ? fromItem(renamed.Attributes) : this.notOwned(id);
  }

  /**
   * Removes the record in one write; its file goes from the table's stream
   * (functions/cleanup.ts). A transaction for its token (from the API
   * request): the SDK's retry of a delete whose answer was lost is a no-op
   * that answers success, not a failed condition read as "there was none".
   */
  async remove(uploaderId: string, id: string, requestId: string): Promise<boolean | NotOwner> {
    const outcome = await transactWrite(
      this.client,
      [{ Delete: { TableName: this.table, Key: attachmentKey(id), ...expressions({ condition: uploadedBy(uploaderId) }) } }],
      requestToken('delete-attachment', uploaderId, id, requestId),
    );
    if (outcome.committed) return true;
    if (outcome.conflict) throw new ConcurrentWrite();
    return (await this.notOwned(id)) ?? false;
  }

  /** After a write refused on the uploader's condition: someone else's record, or none. */
  private async notOwned(id: string): Promise<NotOwner | undefined> {
    const record = await this.get(id);
    return record ? { refused: 'not-owner', record } : undefined;
  }

  /** Exactly limit + 1 items are read: the extra one only tells whether there are more. */
  listUploads(userId: string, page: PageRequest): Promise<Page<AttachmentRecord>> {
    return this.listIndex(attachmentIndexes.uploader, userId, page);
  }

  listThread(key: string, page: PageRequest): Promise<Page<AttachmentRecord>> {
    return this.listIndex(attachmentIndexes.thread, key, page);
  }

  private async listIndex(index: IndexDefinition, partition: string, page: PageRequest): Promise<Page<AttachmentRecord>> {
    const { page: items } = await queryPage(
      this.client,
      { TableName: this.table, IndexName: index.name, ...expressions({ keyCondition: equals(index.partitionKey, partition) }) },
      page,
      // The cursor's attachment may be gone: its key is built, never read.
      (cursor) => ({ ...attachmentKey(cursor), [index.partitionKey]: partition, [index.sortKey]: cursor }),
    );
    return { has_more: items.has_more, data: items.data.map(fromItem) };
  }

  /**
   * Hands a file to the cleanup (see ORPHAN_FILE_SK_PREFIX): one put and one
   * delete of its marker, each idempotent. Throws when DynamoDB does.
   */
  async handOverOrphanFile(attachmentId: string, run: string, fileKey: string): Promise<void> {
    const Key = orphanFileKey(attachmentId, run);
    await this.client.send(new PutCommand({ TableName: this.table, Item: { ...Key, file_key: fileKey } }));
    await this.client.send(new DeleteCommand({ TableName: this.table, Key }));
  }

  /**
   * Removes every record the user uploaded into one of their conversations
   * (after the conversation itself is gone, from its stream), read from the
   * by_conversation index. Pages of 25 deletes, each idempotent, so a retry
   * of the whole cleanup is harmless. The index is eventually consistent on
   * AWS: docs/consistency.md says what that leaves open.
   */
  async removeAllOf(userId: string, conversationId: string): Promise<number> {
    let removed = 0;
    for await (const keys of keysUnder(this.client, this.table, attachmentIndexes.conversation, attachmentConversationKey(userId, conversationId))) {
      for (let start = 0; start < keys.length; start += BATCH_WRITE_MAX) {
        const batch = keys.slice(start, start + BATCH_WRITE_MAX).map((Key) => ({ DeleteRequest: { Key: { ...Key } } }));
        await batchWriteAll(this.client, this.table, batch);
      }
      removed += keys.length;
    }
    return removed;
  }
}

/** The record exists and the user uploaded it. */
const uploadedBy = (userId: string) => and(itemExists(), equals(UPLOADER, userId));

/** The attachment as stored; the upload sessions' completing transaction writes the same item. */
export function attachmentItem(record: AttachmentRecord): Item {
  const { placement, ...fields } = record;
  return {
    ...attachmentKey(record.id),
    ...fields,
    ...(placement
      ? {
          conversation_id: placement.conversation_id,
          ...(placement.counterpart.kind === 'contact' ? { contact_id: placement.counterpart.id } : { group_id: placement.counterpart.id }),
          [attachmentIndexes.thread.partitionKey]: threadKey(threadOf(record.uploaded_by, placement.counterpart)),
          [attachmentIndexes.conversation.partitionKey]: attachmentConversationKey(record.uploaded_by, placement.conversation_id),
        }
      : {}),
  };
}

/** A record from its item (a table read, a query, or a stream image unmarshalled). */
export function fromItem(item: Item): AttachmentRecord {
  const orNull = (value: unknown) => (value === undefined || value === null ? null : (value as string));
  const counterpart: Counterpart | undefined =
    typeof item.group_id === 'string' ? { kind: 'group', id: item.group_id } : typeof item.contact_id === 'string' ? { kind: 'contact', id: item.contact_id } : undefined;
  return {
    id: item.id as string,
    message_id: orNull(item.message_id),
    filename: item.filename as string,
    file_type: item.file_type as string,
    file_size: item.file_size as number,
    created_at: item.created_at as number,
    uploaded_by: item.uploaded_by as string,
    placement: typeof item.conversation_id === 'string' && counterpart ? { conversation_id: item.conversation_id, counterpart } : null,
    file_key: item.file_key as string,
  };
}
