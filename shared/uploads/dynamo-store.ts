import { DeleteCommand, GetCommand, PutCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { attachmentItem } from '../attachments/dynamo-store.js';
import type { AttachmentRecord } from '../attachments/model.js';
import { isConditionFailed } from '../dynamo/errors.js';
import { conversationKey, uploadSessionKey } from '../dynamo/keys.js';
import type { CompletionOutcome, SessionFailure, SessionRecord, UploadSessionStore } from './model.js';

type Item = Record<string, unknown>;

export interface SessionTables {
  sessions: string;
  attachments: string;
  conversations: string;
}

/**
 * Upload sessions under the user's partition (sort key = session id). The
 * completion writes across three tables in one TransactWriteItems, so an
 * attachment exists exactly when its session is completed.
 */
export class DynamoUploadSessionStore implements UploadSessionStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tables: SessionTables,
  ) {}

  async add(userId: string, record: SessionRecord): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.tables.sessions,
        Item: { ...uploadSessionKey(userId, record.id), ...record },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  }

  async get(userId: string, id: string): Promise<SessionRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tables.sessions, Key: uploadSessionKey(userId, id), ConsistentRead: true }),
    );
    return Item ? fromItem(Item) : undefined;
  }

  async complete(userId: string, sessionId: string, attachment: AttachmentRecord, at: number): Promise<CompletionOutcome> {
    const conversationId = attachment.conversation_id;
    try {
      await this.client.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.tables.sessions,
                Key: uploadSessionKey(userId, sessionId),
                UpdateExpression: 'SET #status = :completed',
                ConditionExpression: '#status = :pending',
                ExpressionAttributeNames: { '#status': 'status' },
                ExpressionAttributeValues: { ':completed': 'completed', ':pending': 'pending' },
              },
            },
            {
              Put: {
                TableName: this.tables.attachments,
                Item: attachmentItem(userId, attachment),
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
            ...(conversationId === null
              ? []
              : [
                  {
                    // The conversation check and its activity in one: it must still exist when the attachment appears.
                    Update: {
                      TableName: this.tables.conversations,
                      Key: conversationKey(userId, conversationId),
                      UpdateExpression: 'SET last_active_at = :at',
                      ConditionExpression: 'attribute_exists(pk)',
                      ExpressionAttributeValues: { ':at': at },
                    },
                  },
                ]),
          ],
        }),
      );
      return 'completed';
    } catch (error) {
      const reasons = cancellationReasons(error);
      if (!reasons) throw error;
      if (reasons[0] === 'ConditionalCheckFailed' || reasons[1] === 'ConditionalCheckFailed') return 'session_not_pending';
      if (reasons[2] === 'ConditionalCheckFailed') return 'conversation_missing';
      throw error;
    }
  }

  async fail(userId: string, sessionId: string, failure: SessionFailure): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tables.sessions,
          Key: uploadSessionKey(userId, sessionId),
          UpdateExpression: 'SET #status = :failed, failure = :failure',
          ConditionExpression: '#status = :pending',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':failed': 'failed', ':pending': 'pending', ':failure': failure },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }

  async removeUnlessCompleted(userId: string, sessionId: string): Promise<SessionRecord | undefined> {
    try {
      const { Attributes } = await this.client.send(
        new DeleteCommand({
          TableName: this.tables.sessions,
          Key: uploadSessionKey(userId, sessionId),
          ConditionExpression: 'attribute_exists(pk) AND #status <> :completed',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':completed': 'completed' },
          ReturnValues: 'ALL_OLD',
        }),
      );
      return Attributes ? fromItem(Attributes) : undefined;
    } catch (error) {
      if (isConditionFailed(error)) return undefined;
      throw error;
    }
  }
}

/** The per-item codes of a cancelled transaction, in the order of its items; undefined for any other error. */
function cancellationReasons(error: unknown): (string | undefined)[] | undefined {
  if (!(error instanceof Error) || error.name !== 'TransactionCanceledException') return undefined;
  const reasons = (error as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
  return reasons?.map((reason) => reason.Code);
}

function fromItem(item: Item): SessionRecord {
  const orNull = (value: unknown) => (value === undefined || value === null ? null : (value as string));
  return {
    id: item.id as string,
    status: item.status as SessionRecord['status'],
    attachment_id: item.attachment_id as string,
    upload_id: item.upload_id as string,
    filename: item.filename as string,
    file_size: item.file_size as number,
    file_type: item.file_type as string,
    part_size: item.part_size as number,
    part_count: item.part_count as number,
    expires_at: item.expires_at as number,
    conversation_id: orNull(item.conversation_id),
    message_id: orNull(item.message_id),
    created_at: item.created_at as number,
    ...(item.failure ? { failure: item.failure as SessionFailure } : {}),
  };
}
