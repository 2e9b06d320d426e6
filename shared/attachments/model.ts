import { counterpartOf } from '../conversations/item-codec.js';
import type { Conversation } from '../conversations/model.js';
import type { Counterpart } from '../dynamo/keys.js';
import type { Page, PageRequest } from '../pagination.js';
import {
  type PreviewObject,
  type PreviewRecord,
  type PreviewView,
  previewObject,
  type SettledPreview,
  statusAlone,
} from '../previews/model.js';
import { type FileAccess, fileAccess, type ScanStatus } from '../scanning/model.js';

/** An attachment exactly as the API shows it, to one reader. */
export interface Attachment {
  id: string;
  message_id: string | null;
  /** The reader's own side of the attachment's thread; null while the reader holds none. */
  conversation_id: string | null;
  filename: string;
  /** Presigned GET of the file, minted for each response and never stored; null while scanning holds it from this reader (shared/scanning/). */
  file_url: string | null;
  /** When file_url stops working (Unix seconds): its TTL from now, or sooner if the signing credentials expire sooner. */
  file_url_expires_at: number | null;
  file_type: string;
  file_size: number;
  uploaded_by: string;
  created_at: number;
  /** An image's preview, its thumbnails' links minted for each response; null for a file that is not a previewed image. */
  preview: PreviewView | null;
  scan_status: ScanStatus;
}

/** An attachment as one reader sees it, without its links: what events show (shared/events/). */
export type AttachmentObject = Omit<Attachment, 'file_url' | 'file_url_expires_at' | 'preview'> & { preview: PreviewObject | null };

/**
 * The record as the reader whose side of its thread is `conversationId`
 * sees it, with what scanning leaves that reader of the file (`access`,
 * shared/scanning/model.ts): a held preview shows its status alone, an
 * infected file none.
 */
export function attachmentObject(record: AttachmentRecord, conversationId: string | null, access: FileAccess): AttachmentObject {
  const { id, message_id, filename, file_type, file_size, uploaded_by, created_at, scan_status } = record;
  const shown = previewObject(record.preview);
  const preview = access === 'none' || !shown ? null : access === 'held' ? statusAlone(shown) : shown;
  return { id, message_id, conversation_id: conversationId, filename, file_type, file_size, uploaded_by, created_at, preview, scan_status };
}

/** The uploader's own view: their side is where they placed it, and their own bytes (unless infected). */
export const uploadersObject = (record: AttachmentRecord): AttachmentObject =>
  attachmentObject(record, record.placement?.conversation_id ?? null, fileAccess(record.scan_status, true, { serveUnscannable: false }));

/**
 * Where an attachment was uploaded: the uploader's side (conversation) and
 * whom that side is with, which names the thread every member reads it in.
 */
export interface Placement {
  conversation_id: string;
  counterpart: Counterpart;
}

/** Where an upload into the uploader's side `side` goes; null for an upload into no conversation. */
export const placementIn = (side: Conversation | undefined): Placement | null =>
  side ? { conversation_id: side.id, counterpart: counterpartOf(side) } : null;

/** What is stored about an attachment: no link, and the thread as the uploader placed it. */
export interface AttachmentRecord {
  id: string;
  message_id: string | null;
  filename: string;
  file_type: string;
  file_size: number;
  created_at: number;
  uploaded_by: string;
  /** null: uploaded into no conversation, the uploader's alone. */
  placement: Placement | null;
  /** The S3 key of its file (shared/files/keys.ts): the run that wrote it is part of it. */
  file_key: string;
  /** Absent: not a previewed image (by its bytes). Else pending from the upload until the preview worker settles it. */
  preview?: PreviewRecord;
  /** `pending` from the upload until its scan result is recorded (shared/scanning/); `not_scanned` where scanning is off. */
  scan_status: ScanStatus;
}

/** A rename or removal asked of an attachment by someone who is not its uploader. */
export type NotOwner = { refused: 'not-owner'; record: AttachmentRecord };

export interface AttachmentStore {
  /**
   * Writes a new record (never overwriting one) in place of its run's
   * intent and, when it goes into a conversation, the uploader's activity on
   * that side, on the condition that the side exists and the intent is still
   * there; all or nothing. 'existed': a record of this id is there (an
   * earlier run of the same Idempotency-Key). 'intent-gone': the run's intent
   * was removed (by its own failure path, or its expiry), so its file is the
   * cleanup's and no record may hold it.
   */
  add(
    record: AttachmentRecord,
    requestId: string,
    intent: UploadIntent,
  ): Promise<'added' | 'existed' | 'conversation-missing' | 'intent-gone'>;
  get(id: string): Promise<AttachmentRecord | undefined>;
  /** Only the uploader's: undefined when there is no such attachment, NotOwner when it is someone else's. */
  rename(uploaderId: string, id: string, filename: string, requestId: string): Promise<AttachmentRecord | NotOwner | undefined>;
  /** Removes the record (its file goes from the table's stream): false when there was none, NotOwner when it is someone else's. */
  remove(uploaderId: string, id: string, requestId: string): Promise<boolean | NotOwner>;
  /** The user's own uploads, newest first. */
  listUploads(userId: string, page: PageRequest): Promise<Page<AttachmentRecord>>;
  /** Every member's attachments of a thread, newest first. */
  listThread(threadKey: string, page: PageRequest): Promise<Page<AttachmentRecord>>;
  /** Removes the record of every attachment the user uploaded into one of their conversations; how many there were. */
  removeAllOf(userId: string, conversationId: string): Promise<number>;
  /** Writes an upload run's intent, before its file exists (throws when DynamoDB does). */
  intend(intent: UploadIntent): Promise<void>;
  /** Removes an upload run's intent: the cleanup then removes its file unless a record holds it (throws when DynamoDB does). */
  abandon(intent: UploadIntent): Promise<void>;
  /**
   * Settles the pending preview of the record that holds this file, once,
   * with the uploader's attachment.updated. 'gone': no record holds the file
   * any more; 'settled': it was settled already (a message delivered twice).
   */
  settlePreview(record: AttachmentRecord, preview: SettledPreview): Promise<'recorded' | 'gone' | 'settled'>;
}

/**
 * What an upload run is about to write to S3, recorded before it does: the
 * hand-over of its file to the cleanup, in force before the file exists
 * (docs/consistency.md, "An upload's intent").
 */
export interface UploadIntent {
  attachmentId: string;
  /** The run: one intent per run, as one file key per run. */
  run: string;
  fileKey: string;
  /** Epoch seconds, DynamoDB's TTL attribute: after the run's invocation ended, when nothing of the run can still write. */
  expiresAt: number;
}

/** A file as it arrived in an upload, its name and type already normalised. */
export interface IncomingFile {
  filename: string;
  fileType: string;
  bytes: Buffer;
}

export interface Upload {
  file: IncomingFile;
  conversation_id?: string;
  message_id?: string;
}
