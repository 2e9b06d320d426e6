import type { Page, PageRequest } from '../pagination.js';

/** An attachment exactly as the API shows it. */
export interface Attachment {
  id: string;
  message_id: string | null;
  conversation_id: string | null;
  filename: string;
  /** Presigned GET of the file, minted for each response and never stored. */
  file_url: string;
  /** When file_url stops working (Unix seconds): its TTL from now, or sooner if the signing credentials expire sooner. */
  file_url_expires_at: number;
  file_type: string;
  file_size: number;
  created_at: number;
}

/** What is stored about an attachment: everything but its link. */
export type AttachmentRecord = Omit<Attachment, 'file_url' | 'file_url_expires_at'>;

export interface AttachmentFilter {
  conversation_id?: string;
}

export interface AttachmentStore {
  /**
   * Writes a new record (never overwriting one) and, when it belongs to a
   * conversation, sets the conversation's last_active_at, on the condition
   * that the conversation exists; all or nothing.
   */
  add(userId: string, record: AttachmentRecord, at: number): Promise<'added' | 'existed' | 'conversation-missing'>;
  get(userId: string, id: string): Promise<AttachmentRecord | undefined>;
  /** undefined when there is no such attachment. */
  rename(userId: string, id: string, filename: string): Promise<AttachmentRecord | undefined>;
  /** Removes the record (its file goes from the table's stream); false when there was none. */
  remove(userId: string, id: string, requestId: string): Promise<boolean>;
  list(userId: string, filter: AttachmentFilter, page: PageRequest): Promise<Page<AttachmentRecord>>;
  /** Removes the record of every attachment of a conversation; how many there were. */
  removeAllOf(userId: string, conversationId: string): Promise<number>;
  /** Hands the file of an attachment id that holds no record to the cleanup (throws when that cannot be written). */
  handOverOrphanFile(userId: string, attachmentId: string): Promise<void>;
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
