import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unlessConditionFails } from '../dynamo/errors.js';
import { attachmentConversationKey, attachmentKey } from '../dynamo/keys.js';
import { queryPage } from '../dynamo/query-page.js';
import { attachmentIndexes } from '../dynamo/tables.js';
import type { Page, PageRequest } from '../pagination.js';
import type { AttachmentFilter, AttachmentRecord, AttachmentStore } from './model.js';

type Item = Record<string, unknown>;

const CONVERSATION_INDEX = attachmentIndexes.conversation;
/** Attachments removed together with their conversation, per round. */
const REMOVAL_BATCH = 25;

/**
 * Attachment records under the user's partition, sort key = attachment id
 * (a ULID, so newest first is descending key order). Attachments in a
 * conversation are also indexed by (user, conversation).
 */
export class DynamoAttachmentStore implements AttachmentStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  async add(userId: string, record: AttachmentRecord): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.table,
        Item: toItem(userId, record),
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': 'pk' },
      }),
    );
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
          UpdateExpression: 'SET #filename = :filename',
          ConditionExpression: 'attribute_exists(#pk)',
          ExpressionAttributeNames: { '#filename': 'filename', '#pk': 'pk' },
          ExpressionAttributeValues: { ':filename': filename },
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    return renamed?.Attributes ? fromItem(renamed.Attributes) : undefined;
  }

  async remove(userId: string, id: string): Promise<AttachmentRecord | undefined> {
    const removed = await unlessConditionFails(
      this.client.send(
        new DeleteCommand({
          TableName: this.table,
          Key: attachmentKey(userId, id),
          ConditionExpression: 'attribute_exists(#pk)',
          ExpressionAttributeNames: { '#pk': 'pk' },
          ReturnValues: 'ALL_OLD',
        }),
      ),
    );
    return removed?.Attributes ? fromItem(removed.Attributes) : undefined;
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
            KeyConditionExpression: '#key = :key',
            ExpressionAttributeNames: { '#key': CONVERSATION_INDEX.partitionKey },
            ExpressionAttributeValues: { ':key': byConversation },
          }
        : {
            TableName: this.table,
            ConsistentRead: true,
            KeyConditionExpression: '#pk = :user',
            ExpressionAttributeNames: { '#pk': 'pk' },
            ExpressionAttributeValues: { ':user': userId },
          },
      page,
      (cursor) => ({ ...attachmentKey(userId, cursor), ...(byConversation ? { [CONVERSATION_INDEX.partitionKey]: byConversation } : {}) }),
    );
    return { has_more: items.has_more, data: items.data.map(fromItem) };
  }

  async *batchesOf(userId: string, conversationId: string): AsyncIterable<AttachmentRecord[]> {
    let startKey: Item | undefined;
    do {
      const result = await this.client.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: CONVERSATION_INDEX.name,
          KeyConditionExpression: '#key = :key',
          ExpressionAttributeNames: { '#key': CONVERSATION_INDEX.partitionKey },
          ExpressionAttributeValues: { ':key': attachmentConversationKey(userId, conversationId) },
          Limit: REMOVAL_BATCH,
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      const batch = (result.Items ?? []).map(fromItem);
      if (batch.length > 0) yield batch;
      startKey = result.LastEvaluatedKey;
    } while (startKey);
  }
}

function toItem(userId: string, record: AttachmentRecord): Item {
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
