import type { AttachmentRecord } from '../attachments/model.js';

/**
 * An upload session: a file on its way to S3 in parts, straight from the
 * client. It becomes an attachment when completed and verified.
 * `failed`: completion refused the file for good (size mismatch, conversation
 * gone) and the object was removed. `expired` is never stored: a pending
 * session past expires_at shows it.
 */
export type StoredStatus = 'pending' | 'completed' | 'failed';
export type SessionStatus = StoredStatus | 'expired';

/** What the session's answers show. */
export interface UploadSession {
  id: string;
  status: SessionStatus;
  filename: string;
  file_size: number;
  file_type: string;
  part_size: number;
  part_count: number;
  expires_at: number;
  conversation_id: string | null;
  message_id: string | null;
  created_at: number;
}

export interface PartUrl {
  part_number: number;
  url: string;
  expires_at: number;
}

/** Why a failed session was refused, kept so a repeated complete answers the same. */
export interface SessionFailure {
  code: string;
  message: string;
  param?: string;
}

/** What is stored: the session plus what only the server knows. */
export interface SessionRecord extends Omit<UploadSession, 'status'> {
  status: StoredStatus;
  /** Minted at start: the file's key is the attachment's (fileKey), so a completed upload is already in place. */
  attachment_id: string;
  /** S3's multipart upload id. */
  upload_id: string;
  failure?: SessionFailure;
}

export interface SessionRequest {
  filename: string;
  file_size: number;
  file_type: string;
  conversation_id?: string;
  message_id?: string;
}

/** What the completing transaction found. */
export type CompletionOutcome = 'completed' | 'session_not_pending' | 'conversation_missing';

/**
 * The completing transaction, apart from the store of sessions: only the complete function
 * bundles it (with the attachment record's writes and the conversation's activity).
 */
export interface SessionCompletionStore {
  /**
   * One transaction: the session goes from pending to completed, the
   * attachment record is created, and its conversation (if any) must still
   * exist and becomes active at `at`. All or nothing, idempotent for
   * `requestId` (the API request completing it).
   */
  complete(userId: string, sessionId: string, attachment: AttachmentRecord, requestId: string): Promise<CompletionOutcome>;
}

export interface UploadSessionStore {
  /** Writes a new session; never overwrites one. */
  add(userId: string, record: SessionRecord): Promise<void>;
  get(userId: string, id: string): Promise<SessionRecord | undefined>;
  /** Marks a pending session failed; false when it was no longer pending. */
  fail(userId: string, sessionId: string, failure: SessionFailure): Promise<boolean>;
  /** Removes a session that is not completed: the removed record, or undefined (none, or completed). */
  removeUnlessCompleted(userId: string, sessionId: string): Promise<SessionRecord | undefined>;
}
