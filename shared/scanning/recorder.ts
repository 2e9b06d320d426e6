import type { AttachmentRecord } from '../attachments/model.js';
import { fileOfKey } from '../files/keys.js';
import { logger } from '../observability.js';
import { type GuardDutyResult, type SettledScan, settlementOf } from './model.js';

/** A scanned object that is an attachment's file: its key, and the attachment and run it names. */
export interface ScannedFile {
  key: string;
  attachmentId: string;
  run: string;
}

/** One scan result, as GuardDuty's event on EventBridge reports it (shared/scanning/result-event.ts). */
export interface ScanResult {
  /** The EventBridge event's id: the same on every delivery of one result. */
  eventId: string;
  bucket: string;
  objectKey: string;
  result: GuardDutyResult;
}

/** What recording a result on the record came to. */
export type Settlement = 'settled' | 'not-pending' | 'no-record';

/** What settles a file: GuardDuty's result, or its timer (no result within the timeout). */
export type SettledBy = 'result' | 'timeout';

export interface ScanStore {
  /** Keeps a file's settled result beside its record, for a record that has not come yet (idempotent). */
  keep(file: ScannedFile, status: SettledScan): Promise<void>;
  /** The result kept for a file, if any. */
  kept(file: ScannedFile): Promise<SettledScan | undefined>;
  /** Notes a failed scan of the file: true for its first failure (or that failure's event delivered again). */
  firstFailure(file: ScannedFile, eventId: string): Promise<boolean>;
  /**
   * The record's pending status settled, once, with the uploader's event
   * (and, by a result, the kept result's removal): 'no-record' while no
   * record holds the file (the kept result waits for it), 'not-pending' when
   * it was settled before. A result's `clean` or `infected` also replaces an
   * `unscannable` its timeout settled: a late answer still counts.
   */
  settle(file: ScannedFile, status: SettledScan, by: SettledBy): Promise<Settlement>;
}

/** A file's timer: its message comes back when the file's scan timeout is due (shared/scanning/timers.ts). */
export interface ScanTimer {
  file_key: string;
  /** Epoch seconds: the upload's time plus the scan timeout. */
  due_at: number;
}

export interface ScanTimers {
  start(timers: readonly ScanTimer[]): Promise<void>;
}

/** Asks the scanner for a new scan of an object (GuardDuty's SendObjectMalwareScan). */
export interface Rescans {
  askAgain(bucket: string, key: string): Promise<void>;
}

export type RecordOutcome = Settlement | 'asked-again' | 'not-a-file';

/**
 * The scan recorder's one job (docs/api.md, "Scanning"): a result on the
 * record of the file scanned, once. ACCESS_DENIED and FAILED are asked again
 * once, then `unscannable`. A result is kept beside the record first, so one
 * that comes before its record is applied when the record does (the fan-out,
 * settleKept); one for a deleted record changes nothing. Every step is safe
 * to repeat: a redelivered or late result finds the record settled.
 */
export class ScanRecorder {
  constructor(
    private readonly store: ScanStore,
    private readonly rescans: Rescans,
  ) {}

  async record(result: ScanResult): Promise<RecordOutcome> {
    const file = scannedFile(result.objectKey);
    if (!file) return 'not-a-file';
    let status = settlementOf(result.result);
    if (status === 'ask-again') {
      if (await this.store.firstFailure(file, result.eventId)) {
        await this.rescans.askAgain(result.bucket, result.objectKey);
        logger.info('scan asked again', { attachment_id: file.attachmentId, result: result.result });
        return 'asked-again';
      }
      status = 'unscannable';
    }
    await this.store.keep(file, status);
    return this.store.settle(file, status, 'result');
  }
}

/**
 * The fan-out's step for a new record still pending its scan: a result kept
 * because it came first settles it now; otherwise its timer is due, the
 * upload's time plus `timeoutSeconds` (the fan-out starts it: ScanTimers).
 */
export async function settleKeptOrTime(
  store: Pick<ScanStore, 'kept' | 'settle'>,
  record: AttachmentRecord,
  timeoutSeconds: number,
): Promise<Settlement | ScanTimer | 'not-a-file'> {
  const file = scannedFile(record.file_key);
  if (!file) return 'not-a-file';
  const kept = await store.kept(file);
  if (kept) return store.settle(file, kept, 'result');
  return { file_key: record.file_key, due_at: record.created_at + timeoutSeconds };
}

/**
 * A file whose timer came (functions/scan-timeout.ts): `unscannable` if
 * still pending, unless a result was kept meanwhile (its recording failed
 * after keeping it), which then settles it. A timer that comes again changes nothing.
 */
export async function settleTimedOut(store: Pick<ScanStore, 'kept' | 'settle'>, fileKey: string): Promise<Settlement | 'not-a-file'> {
  const file = scannedFile(fileKey);
  if (!file) return 'not-a-file';
  const kept = await store.kept(file);
  return kept ? store.settle(file, kept, 'result') : store.settle(file, 'unscannable', 'timeout');
}

function scannedFile(key: string): ScannedFile | undefined {
  const named = fileOfKey(key);
  return named && { key, ...named };
}
