import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { putUpload } from '../attachments/dynamo-store.js';
import type { AttachmentRecord } from '../attachments/model.js';
import { isConditionFailed, unlessConditionFails } from '../dynamo/errors.js';
import { and, equals, expressions, itemAbsent, itemExists, notEquals } from '../dynamo/expressions.js';
import { uploadSessionKey } from '../dynamo/keys.js';
import type { Outbox } from '../events/outbox.js';
import type { CompletionOutcome, SessionCompletionStore, SessionFailure, SessionRecord, UploadSessionStore } from './model.js';

type Item = Record<string, unknown>;

/** A session's writes, but its removal, hold only while it is open. */
const STILL_PENDING = equals('status', 'pending');

export interface SessionTables {
  sessions: string;
  attachments: string;
  conversations: string;
}

/** Upload sessions under the user's partition (sort key = session id). */
export class DynamoUploadSessionStore implements UploadSessionStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tables: SessionTables,
  ) {}

  /**
   * The session's item, once. Its id is new, so the only item its condition
   * can meet is its own, written by an attempt whose answer was lost and that
   * the SDK sent again: DynamoDB returns that item, and its multipart upload
   * tells it is this session's.
   */
  async add(userId: string, record: SessionRecord): Promise<void> {
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.tables.sessions,
          Item: { ...uploadSessionKey(userId, record.id), ...record },
          ...expressions({ condition: itemAbsent() }),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
    } catch (error) {
      if (!(isConditionFailed(error) && writtenBy(error, record.upload_id))) throw error;
    }
  }

  async get(userId: string, id: string): Promise<SessionRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tables.sessions, Key: uploadSessionKey(userId, id), ConsistentRead: true }),
    );
    return Item ? fromItem(Item) : undefined;
  }

  async fail(userId: string, sessionId: string, failure: SessionFailure): Promise<boolean> {
    const written = await unlessConditionFails(
      this.client.send(
        new UpdateCommand({
          TableName: this.tables.sessions,
          Key: uploadSessionKey(userId, sessionId),
          ...expressions({ update: { set: { status: 'failed', failure } }, condition: STILL_PENDING }),
        }),
      ),
    );
    return written !== undefined;
  }

  async removeUnlessCompleted(userId: string, sessionId: string): Promise<SessionRecord | undefined> {
    const removed = await unlessConditionFails(
      this.client.send(
        new DeleteCommand({
          TableName: this.tables.sessions,
          Key: uploadSessionKey(userId, sessionId),
          ...expressions({ condition: and(itemExists(), notEquals('status', 'completed')) }),
          ReturnValues: 'ALL_OLD',
        }),
      ),
    );
    return removed?.Attributes ? fromItem(removed.Attributes) : undefined;
  }
}

/**
 * The completion, across three tables in one TransactWriteItems, so an attachment (and its
 * attachment.created event) exists exactly when its session is completed. A class of its own:
 * the other session functions do not bundle the attachment's writes.
 */
export class DynamoSessionCompletion implements SessionCompletionStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tables: SessionTables,
    /** The uploader's feed: a completion writes its attachment.created event with it. */
    private readonly outbox: Outbox,
  ) {}

  /**
   * Closes the session, puts the attachment record and, when the file goes
   * into a conversation, marks the conversation active exactly as a small
   * upload does (ConversationActivity: it must exist, its last_active_at and
   * unread key move by the read-state case that holds), all in one
   * transaction. The token (from its items: contentToken) makes the SDK's
   * retry after a lost answer a no-op; another request's completion is a
   * different transaction that finds the session closed.
   */
  async complete(userId: string, sessionId: string, attachment: AttachmentRecord, requestId: string): Promise<CompletionOutcome> {
    const close = {
      Update: {
        TableName: this.tables.sessions,
        Key: uploadSessionKey(userId, sessionId),
        ...expressions({ update: { set: { status: 'completed' } }, condition: STILL_PENDING }),
      },
    };
    const outcome = await putUpload(this.client, this.tables, this.outbox, attachment, requestId, [close]);
    if (outcome === 'conversation-missing') return 'conversation_missing';
    return outcome.committed ? 'completed' : 'session_not_pending';
  }
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

/** Whether the item a failed condition met (ALL_OLD) is the one of this multipart upload. */
function writtenBy(error: unknown, uploadId: string): boolean {
  const item = (error as { Item?: { upload_id?: { S?: string } } }).Item;
  return item?.upload_id?.S === uploadId;
}
