import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { type ActivityOutcome, ConversationActivity, transactWithActivity } from '../conversations/activity.js';
import { and, type Condition, equals, expressions, itemAbsent, itemExists, type Update } from '../dynamo/expressions.js';
import { attachmentConversationKey, attachmentKey, type Counterpart, threadKey, threadOf, uploadIntentKey } from '../dynamo/keys.js';
import { keysUnder, queryPage } from '../dynamo/query-page.js';
import { attachmentIndexes, type IndexDefinition } from '../dynamo/tables.js';
import { type TransactItem, transactWrite } from '../dynamo/transactions.js';
import { createdEvent, deletedEvent, type EventDraft, updatedEvents } from '../events/model.js';
import { headTaken, type Outbox, withFeed } from '../events/outbox.js';
import type { Page, PageRequest } from '../pagination.js';
import type { PreviewRecord, SettledPreview } from '../previews/model.js';
import type { ScanStatus } from '../scanning/model.js';
import { type AttachmentRecord, type AttachmentStore, type NotOwner, type UploadIntent, uploadersObject } from './model.js';

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
    /** The uploader's feed: an upload, a rename that changes the name and a removal write their event with them. */
    private readonly outbox: Outbox,
  ) {}

  /**
   * The record, the uploader's side's activity and event, and the removal of the run's intent, in one
   * transaction on the side and the intent still being there (docs/consistency.md, "An upload's intent").
   */
  async add(
    record: AttachmentRecord,
    requestId: string,
    intent: UploadIntent,
  ): Promise<'added' | 'existed' | 'conversation-missing' | 'intent-gone'> {
    const tables = { attachments: this.table, conversations: this.conversationsTable };
    const replaced: TransactItem = {
      Delete: { TableName: this.table, Key: uploadIntentKey(intent.attachmentId, intent.run), ...expressions({ condition: itemExists() }) },
    };
    const outcome = await putUpload(this.client, tables, this.outbox, record, requestId, [replaced]);
    if (outcome === 'conversation-missing') return outcome;
    if (outcome.committed) return 'added';
    if (outcome.conditionFailed[0]) return 'intent-gone';
    // The record exists: its id is this upload's own (new, or its Idempotency-Key's seed), so an earlier run of it wrote it.
    return 'existed';
  }

  async get(id: string): Promise<AttachmentRecord | undefined> {
    const { Item } = await this.client.send(new GetCommand({ TableName: this.table, Key: attachmentKey(id), ConsistentRead: true }));
    return Item ? fromItem(Item) : undefined;
  }

  /**
   * The record is read, and a new name written in one transaction with its
   * attachment.updated event, on the condition that the uploader's record
   * still has the name read (so previous_attributes holds the true old name);
   * a rename or removal that came between is read again. The same name is no
   * change: nothing is written.
   */
  async rename(uploaderId: string, id: string, filename: string, requestId: string): Promise<AttachmentRecord | NotOwner | undefined> {
    return withFeed(async (retry) => {
      const record = await this.get(id);
      if (!record) return undefined;
      if (record.uploaded_by !== uploaderId) return { refused: 'not-owner', record };
      const renamed = { ...record, filename };
      const events = updatedEvents('attachment', uploadersObject(record), uploadersObject(renamed), requestId);
      if (events.length === 0) return record;
      const change = {
        Update: {
          TableName: this.table,
          Key: attachmentKey(id),
          ...expressions({ update: { set: { filename } }, condition: and(uploadedBy(uploaderId), equals('filename', record.filename)) }),
        },
      };
      const feed = await this.outbox.append(uploaderId, events);
      const outcome = await transactWrite(this.client, [change, ...feed.items]);
      if (outcome.committed) return renamed;
      return retry;
    });
  }

  /**
   * Removes the record in one write; its file goes from the table's stream
   * (functions/cleanup.ts). A transaction for its token (from its items:
   * contentToken): the SDK's retry of a delete whose answer was lost is a
   * no-op that answers success, not a failed condition read as "there was
   * none".
   * The uploader's attachment.deleted event is in the same transaction.
   */
  async remove(uploaderId: string, id: string, requestId: string): Promise<boolean | NotOwner> {
    return withFeed(async (retry) => {
      const removal = [
        { Delete: { TableName: this.table, Key: attachmentKey(id), ...expressions({ condition: uploadedBy(uploaderId) }) } },
      ];
      const feed = await this.outbox.append(uploaderId, [deletedEvent('attachment', id, requestId)]);
      const outcome = await transactWrite(this.client, [...removal, ...feed.items]);
      if (outcome.committed) return true;
      if (headTaken(outcome, removal.length)) return retry;
      return (await this.notOwned(id)) ?? false;
    });
  }

  /**
   * The settled preview in place of `pending`, in one transaction with the
   * uploader's attachment.updated (previous_attributes.preview), on the
   * condition that the record still holds the file rendered and is still
   * pending: a record removed or replaced meanwhile is 'gone' (its
   * thumbnails are the caller's to remove), one settled by an earlier
   * delivery 'settled'. The other members' events follow from the table's
   * stream (the fan-out), as for a rename.
   */
  async settlePreview(record: AttachmentRecord, preview: SettledPreview): Promise<'recorded' | 'gone' | 'settled'> {
    return withFeed(async (retry) => {
      const { change, events } = pendingSettlement(this.table, record, { ...record, preview }, PREVIEW_STATUS, {
        set: previewAttributes(preview),
        remove: preview.status === 'ready' ? ['preview_failure'] : ['preview'],
      });
      const feed = await this.outbox.append(record.uploaded_by, events);
      const outcome = await transactWrite(this.client, [change, ...feed.items]);
      if (outcome.committed) return 'recorded';
      if (headTaken(outcome, 1)) return retry;
      const now = await this.get(record.id);
      // An infected file's thumbnails never stay (docs/api.md, "Scanning"): for the worker it is gone.
      return now?.file_key === record.file_key && now.scan_status !== 'infected' ? 'settled' : 'gone';
    });
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

  /** An upload run's intent (see UPLOAD_INTENT_SK_PREFIX): one put, idempotent. */
  async intend(intent: UploadIntent): Promise<void> {
    const Item = { ...uploadIntentKey(intent.attachmentId, intent.run), file_key: intent.fileKey, expires_at: intent.expiresAt };
    await this.client.send(new PutCommand({ TableName: this.table, Item }));
  }

  /** Its removal: its REMOVE hands the file to the cleanup. One delete, idempotent (none when it is gone already). */
  async abandon(intent: UploadIntent): Promise<void> {
    await this.client.send(new DeleteCommand({ TableName: this.table, Key: uploadIntentKey(intent.attachmentId, intent.run) }));
  }

  /**
   * Removes every record the user uploaded into one of their conversations
   * (after the conversation itself is gone, from its stream), read from the
   * by_conversation index, each in one transaction with the uploader's
   * attachment.deleted event (request_id null: the cleanup removed it), on
   * the condition that the record is still there: a record removed before
   * (by its uploader's DELETE, or by an earlier run of this cleanup) is
   * skipped, with no event. The index is eventually consistent on AWS:
   * docs/consistency.md says what that leaves open.
   */
  async removeAllOf(userId: string, conversationId: string): Promise<number> {
    let removed = 0;
    for await (const keys of keysUnder(
      this.client,
      this.table,
      attachmentIndexes.conversation,
      attachmentConversationKey(userId, conversationId),
    )) {
      for (const { pk } of keys) if (await this.removeLeftOver(userId, pk as string)) removed += 1;
    }
    return removed;
  }

  private removeLeftOver(uploaderId: string, id: string): Promise<boolean> {
    return withFeed(async (retry) => {
      const removal = [
        { Delete: { TableName: this.table, Key: attachmentKey(id), ...expressions({ condition: uploadedBy(uploaderId) }) } },
      ];
      const feed = await this.outbox.append(uploaderId, [deletedEvent('attachment', id, null)]);
      const items = [...removal, ...feed.items];
      // A later run of the cleanup may build this transaction again: its token is its items.
      const outcome = await transactWrite(this.client, items);
      if (outcome.committed) return true;
      return headTaken(outcome, removal.length) ? retry : false;
    });
  }
}

/**
 * An upload's write, by POST or by a completed session (after `before`, the
 * session's close): the record put where none is, the uploader's own
 * activity on the side it went into (active and read at once: see
 * ConversationActivity) and their attachment.created, in one transaction.
 */
export function putUpload(
  client: DynamoDBDocumentClient,
  tables: { attachments: string; conversations: string },
  outbox: Outbox,
  record: AttachmentRecord,
  requestId: string,
  before: TransactItem[] = [],
): Promise<ActivityOutcome> {
  const put: TransactItem = {
    Put: { TableName: tables.attachments, Item: attachmentItem(record), ...expressions({ condition: itemAbsent() }) },
  };
  const activity = record.placement
    ? new ConversationActivity(client, tables.conversations, record.uploaded_by, record.placement.conversation_id, {
        kind: 'own-upload',
        at: record.created_at,
      })
    : undefined;
  const feed = {
    outbox,
    userId: record.uploaded_by,
    events: [createdEvent('attachment', uploadersObject(record), requestId)],
    requestId,
    at: record.created_at,
  };
  return transactWithActivity(client, [...before, put], activity, feed);
}

/** The preview's state, top-level so that a condition can read it (the kit names no nested paths). */
/**
 * A pending field of an attachment settled (its preview, its scan): the
 * record's update, on the condition that it still holds the same file and the
 * field is still pending (or still as `from` says: a timed-out scan a late
 * result replaces), and the uploader's attachment.updated from `record` to
 * `settled`; the other members' events follow from the stream.
 */
export function pendingSettlement(
  table: string,
  record: AttachmentRecord,
  settled: AttachmentRecord,
  pendingAttribute: string,
  update: Update,
  from: Condition = equals(pendingAttribute, 'pending'),
): { change: TransactItem; events: EventDraft[] } {
  const change = {
    Update: {
      TableName: table,
      Key: attachmentKey(record.id),
      ...expressions({ update, condition: and(itemExists(), equals('file_key', record.file_key), from) }),
    },
  };
  return { change, events: updatedEvents('attachment', uploadersObject(record), uploadersObject(settled), null) };
}

const PREVIEW_STATUS = 'preview_status';

/** A preview as the item's attributes: its status, and a ready one's size, placeholder and renditions (or a failure's reason). */
function previewAttributes(preview: PreviewRecord): Item {
  if (preview.status === 'pending') return { [PREVIEW_STATUS]: 'pending' };
  if (preview.status === 'failed') return { [PREVIEW_STATUS]: 'failed', preview_failure: preview.reason };
  const { status, ...ready } = preview;
  return { [PREVIEW_STATUS]: status, preview: ready };
}

function previewOf(item: Item): PreviewRecord | undefined {
  const status = item[PREVIEW_STATUS];
  if (status === 'pending') return { status };
  if (status === 'failed') return { status, reason: String(item.preview_failure ?? '') };
  if (status !== 'ready') return undefined;
  const ready = item.preview as Omit<Extract<PreviewRecord, { status: 'ready' }>, 'status'>;
  return { status, ...ready };
}

/** The record exists and the user uploaded it. */
const uploadedBy = (userId: string) => and(itemExists(), equals(UPLOADER, userId));

/** The attachment as stored; the upload sessions' completing transaction writes the same item. */
export function attachmentItem(record: AttachmentRecord): Item {
  const { placement, preview, ...fields } = record;
  return {
    ...attachmentKey(record.id),
    ...fields,
    ...(preview ? previewAttributes(preview) : {}),
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
    typeof item.group_id === 'string'
      ? { kind: 'group', id: item.group_id }
      : typeof item.contact_id === 'string'
        ? { kind: 'contact', id: item.contact_id }
        : undefined;
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
    ...optional('preview', previewOf(item)),
    // A record from before scanning was never scanned.
    scan_status: (item.scan_status as ScanStatus | undefined) ?? 'not_scanned',
  };
}

const optional = <K extends string, V>(name: K, value: V | undefined) => (value === undefined ? {} : ({ [name]: value } as Record<K, V>));
