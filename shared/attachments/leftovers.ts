import { thumbnailKeys } from '../files/keys.js';
import type { FileStore } from '../files/model.js';
import type { AttachmentStore } from './model.js';

/**
 * What the cleanup (functions/cleanup.ts) removes of attachments once what
 * held it is gone from a table: the records of a removed conversation, the
 * file of a removed record, and the file of an upload run whose intent went
 * without a record taking its place (AttachmentUploads). Every removal is
 * idempotent: a stream record comes at least once.
 */
export class AttachmentLeftovers {
  constructor(
    private readonly store: Pick<AttachmentStore, 'get' | 'removeAllOf'>,
    private readonly files: Pick<FileStore, 'remove'>,
  ) {}

  /** The records of every attachment the user uploaded into a conversation that is gone (their files follow). */
  removeAllOf(userId: string, conversationId: string): Promise<number> {
    return this.store.removeAllOf(userId, conversationId);
  }

  /**
   * The file of an upload run whose intent is gone, unless the record holds
   * it (its transaction removed the intent). No record can come to hold it
   * later: that transaction needs the intent.
   */
  async removeUnheldFile(attachmentId: string, key: string): Promise<void> {
    if ((await this.store.get(attachmentId))?.file_key === key) return;
    await this.removeFile(key);
  }

  /**
   * An infected file (its scan result's item removed, by the write that
   * settled its record or by its expiry), and its thumbnails: never served,
   * so never kept, unless the record holds the file settled otherwise (a
   * contrary result that came first keeps it).
   */
  async removeInfectedFile(attachmentId: string, key: string): Promise<void> {
    const record = await this.store.get(attachmentId);
    if (record?.file_key === key && record.scan_status !== 'infected' && record.scan_status !== 'pending') return;
    await this.removeFile(key);
  }

  /**
   * The file of an attachment whose record is gone, and its thumbnails (their
   * keys derive from the file's: nothing to read). Removing a file that is
   * not there is not an error.
   */
  async removeFile(key: string): Promise<void> {
    // The thumbnails at once (most files have none: a missing key is no error), then the file they derive from.
    await Promise.all(thumbnailKeys(key).map((thumbnail) => this.files.remove(thumbnail)));
    await this.files.remove(key);
  }
}
