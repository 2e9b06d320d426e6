import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { fromItem, pendingSettlement } from '../attachments/dynamo-store.js';
import type { AttachmentRecord } from '../attachments/model.js';
import { isConditionFailed } from '../dynamo/errors.js';
import { and, equals, expressions, notExists, or } from '../dynamo/expressions.js';
import { attachmentKey, scanResultKey } from '../dynamo/keys.js';
import { transactWrite } from '../dynamo/transactions.js';
import { type Outbox, withFeed } from '../events/outbox.js';
import type { Clock } from '../time.js';
import type { SettledScan } from './model.js';
import type { ScannedFile, ScanStore, SettledBy, Settlement } from './recorder.js';

/** How long a result kept for a record that has not come stays: far past an upload session's life. */
const KEPT_SECONDS = 7 * 24 * 3600;

/** The preview's attributes (shared/attachments/dynamo-store.ts): an infected file is never previewed. */
const PREVIEW_ATTRIBUTES = ['preview_status', 'preview', 'preview_failure'];

/**
 * Why a record is `unscannable`, when its timer settled it (internal, not in
 * the API): a late result replaces only that `unscannable`.
 */
const UNSCANNABLE_BY = 'scan_unscannable_by';
const TIMED_OUT: SettledBy = 'timeout';

/**
 * Scan results on the attachments table: each file's result item
 * (scanResultKey) beside its record, and the record's `scan_status` settled
 * once, from `pending`, in one transaction with the uploader's
 * attachment.updated and the result item's removal. The other members'
 * events follow from the table's stream (the fan-out), as for a rename; an
 * infected result item's removal hands the file to the cleanup.
 */
export class DynamoScanStore implements ScanStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly outbox: Outbox,
    private readonly clock: Clock,
  ) {}

  async keep(file: ScannedFile, status: SettledScan): Promise<void> {
    const Item = { ...this.key(file), file_key: file.key, result: status, expires_at: this.clock() + KEPT_SECONDS };
    await this.client.send(new PutCommand({ TableName: this.table, Item }));
  }

  async kept(file: ScannedFile): Promise<SettledScan | undefined> {
    const { Item } = await this.client.send(new GetCommand({ TableName: this.table, Key: this.key(file), ConsistentRead: true }));
    return Item?.file_key === file.key ? (Item.result as SettledScan | undefined) : undefined;
  }

  async firstFailure(file: ScannedFile, eventId: string): Promise<boolean> {
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.table,
          Item: { ...this.key(file), file_key: file.key, failed_event: eventId, expires_at: this.clock() + KEPT_SECONDS },
          // The first failure's event, or the same event delivered again (its retry may not have been asked yet).
          ...expressions({ condition: or(notExists('failed_event'), equals('failed_event', eventId)) }),
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }

  settle(file: ScannedFile, status: SettledScan, by: SettledBy): Promise<Settlement> {
    return withFeed(async (retry) => {
      const item = (
        await this.client.send(new GetCommand({ TableName: this.table, Key: attachmentKey(file.attachmentId), ConsistentRead: true }))
      ).Item;
      const record = item ? fromItem(item) : undefined;
      if (!record || record.file_key !== file.key) return 'no-record';
      // A result's item goes with its settling; a timer leaves it, so that a result kept meanwhile is still applied.
      const drop = by === 'result' ? [{ Delete: { TableName: this.table, Key: this.key(file) } }] : [];
      const from = settledFrom(record.scan_status, item?.[UNSCANNABLE_BY], status, by);
      if (!from) {
        if (by === 'result') await this.client.send(new DeleteCommand({ TableName: this.table, Key: this.key(file) }));
        return 'not-pending';
      }
      const settled: AttachmentRecord = { ...record, scan_status: status, ...(status === 'infected' ? { preview: undefined } : {}) };
      const { change, events } = pendingSettlement(
        this.table,
        record,
        settled,
        'scan_status',
        {
          set: { scan_status: status, ...(by === TIMED_OUT ? { [UNSCANNABLE_BY]: TIMED_OUT } : {}) },
          remove: [...(status === 'infected' ? PREVIEW_ATTRIBUTES : []), ...(by === TIMED_OUT ? [] : [UNSCANNABLE_BY])],
        },
        from,
      );
      const feed = await this.outbox.append(record.uploaded_by, events);
      const outcome = await transactWrite(this.client, [change, ...drop, ...feed.items]);
      if (outcome.committed) return 'settled';
      // The feed's head moved, or the record changed meanwhile (settled, renamed, removed): read it again.
      return retry;
    });
  }

  private key(file: ScannedFile) {
    return scanResultKey(file.attachmentId, file.run);
  }
}

/**
 * The record's state a settling may start from, as a condition, or none:
 * `pending`, or an `unscannable` its timer settled, which a late `clean` or
 * `infected` replaces (never a result's `unscannable`, a `clean` or an `infected`).
 */
function settledFrom(current: string, unscannableBy: unknown, status: SettledScan, by: SettledBy) {
  if (current === 'pending') return equals('scan_status', 'pending');
  const late = by === 'result' && status !== 'unscannable' && current === 'unscannable' && unscannableBy === TIMED_OUT;
  return late ? and(equals('scan_status', 'unscannable'), equals(UNSCANNABLE_BY, TIMED_OUT)) : undefined;
}
