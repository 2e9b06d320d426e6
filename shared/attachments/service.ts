import type { Groups } from '../auth/groups.js';
import type { MemberConversations } from '../conversations/membership.js';
import { inFallback } from '../deadline.js';
import { fileKey } from '../files/keys.js';
import { referenceMissing, resourceMissing } from '../http/errors.js';
import { seededId } from '../ids.js';
import type { Page, PageRequest } from '../pagination.js';
import { logger } from '../observability.js';
import { systemClock, type Clock } from '../time.js';
import type { Attachment, AttachmentFilter, AttachmentRecord, AttachmentStore, Upload } from './model.js';
import type { FileLinks, FileStore } from '../files/model.js';

/**
 * What the attachment endpoints that never touch the bytes do: records, plus a
 * link minted for each response. No file store, so their bundles carry no S3
 * client. A delete is one of them: it removes the record only, and the file
 * follows from the table's stream (functions/cleanup.ts).
 */
export class AttachmentViews {
  constructor(
    protected readonly store: AttachmentStore,
    private readonly links: FileLinks,
    /** Whether the user may add to or read a conversation's attachments (a group's needs the group in the token). */
    protected readonly conversations: MemberConversations,
  ) {}

  async getAttachment(userId: string, id: string): Promise<Attachment> {
    return this.withLink(userId, (await this.store.get(userId, id)) ?? notFound(id));
  }

  /** Metadata only: the file and its key stay; the next link carries the new name. */
  async renameAttachment(userId: string, id: string, filename: string): Promise<Attachment> {
    return this.withLink(userId, (await this.store.rename(userId, id, filename)) ?? notFound(id));
  }

  /** The record goes now; the file follows from the table's stream. */
  async deleteAttachment(userId: string, id: string, requestId: string): Promise<void> {
    if (!(await this.store.remove(userId, id, requestId))) notFound(id);
  }

  /** Another user's conversation id lists nothing, as ever; the user's own group conversation needs the group in the token. */
  async listAttachments(userId: string, groups: Groups, filter: AttachmentFilter, page: PageRequest): Promise<Page<Attachment>> {
    if (filter.conversation_id !== undefined) await this.conversations.memberConversation(userId, groups, filter.conversation_id, 'conversation_id');
    const { has_more, data } = await this.store.list(userId, filter, page);
    return { has_more, data: await Promise.all(data.map((record) => this.withLink(userId, record))) };
  }

  /** The attachment with a file_url minted now (a replayed upload shows a live link). */
  relink(userId: string, record: AttachmentRecord): Promise<Attachment> {
    return this.withLink(userId, record);
  }

  protected async withLink(userId: string, record: AttachmentRecord): Promise<Attachment> {
    const link = await this.links.download(fileKey(userId, record.id), {
      filename: record.filename,
      fileType: record.file_type,
    });
    const { id, message_id, conversation_id, filename, file_type, file_size, created_at } = record;
    return {
      id,
      message_id,
      conversation_id,
      filename,
      file_url: link.url,
      file_url_expires_at: link.expiresAt,
      file_type,
      file_size,
      created_at,
    };
  }
}

/**
 * What writes and removes attachment files: the upload, and the cleanup that
 * follows deletes from the tables' streams. The rule that keeps record and
 * file consistent: a record only ever exists while its file does. So a file is
 * written before its record, and removed only after its record is gone (from
 * the table's stream, functions/cleanup.ts, however often that must retry).
 */
export class AttachmentService extends AttachmentViews {
  constructor(
    store: AttachmentStore,
    links: FileLinks,
    conversations: MemberConversations,
    private readonly files: FileStore,
    private readonly clock: Clock = systemClock,
  ) {
    super(store, links, conversations);
  }

  /**
   * The conversation's membership check, the file, then the record in one
   * transaction with its conversation's check: an upload into a
   * conversation that is gone, or being deleted, stores nothing and answers
   * 400 resource_missing.
   */
  async upload(userId: string, groups: Groups, upload: Upload, seed?: string): Promise<Attachment> {
    // Before the file is written: a refusal (403 not_a_member, or a conversation that is not there) leaves nothing behind.
    // A conversation's group never changes, so the transaction below needs only to check that it still exists.
    if (upload.conversation_id !== undefined && !(await this.conversations.memberConversation(userId, groups, upload.conversation_id, 'conversation_id'))) {
      throw conversationMissing(upload.conversation_id);
    }
    const now = this.clock();
    const record: AttachmentRecord = {
      // Seeded (Idempotency-Key): a retry after an unknown outcome writes the same file and finds its record.
      id: seededId('att', seed),
      message_id: upload.message_id ?? null,
      conversation_id: upload.conversation_id ?? null,
      filename: upload.file.filename,
      file_type: upload.file.fileType,
      file_size: upload.file.bytes.length,
      created_at: now,
    };
    const key = fileKey(userId, record.id);
    try {
      await this.files.put(key, upload.file.bytes, record.file_type);
    } catch (error) {
      // Written or not (the answer may be what was lost): no record will hold it.
      await inFallback(() => this.dropFile(userId, record.id, { unheld: false }));
      throw error;
    }
    let outcome: 'added' | 'existed' | 'conversation-missing';
    try {
      outcome = await this.store.add(userId, record, now);
    } catch (error) {
      // The record may or may not have been written (every retry's answer was lost): ask.
      if (await inFallback(() => this.recordStored(userId, record.id))) return this.withLink(userId, record);
      throw error;
    }
    if (outcome === 'existed') return this.withLink(userId, (await this.store.get(userId, record.id)) ?? record);
    if (outcome === 'conversation-missing') {
      await inFallback(() => this.dropFile(userId, record.id, { unheld: true }));
      throw conversationMissing(upload.conversation_id ?? '');
    }
    return this.withLink(userId, record);
  }

  /** After a failed record write: whether the record is there after all; when it is not (or that cannot be known), its file is dropped. */
  private async recordStored(userId: string, id: string): Promise<boolean> {
    try {
      if (await this.store.get(userId, id)) return true;
      // Another run of the same Idempotency-Key may still commit this id: the cleanup looks again.
      await this.dropFile(userId, id, { unheld: false });
    } catch (error) {
      logger.warn('upload outcome unknown', { attachment_id: id, error: String(error) });
      await this.dropFile(userId, id, { unheld: false });
    }
    return false;
  }

  /**
   * A failed upload's file. When it is surely there and no record can hold
   * it (`unheld`), it is removed at once. Otherwise (its PUT's outcome is unknown, and a
   * delayed PUT could still land; or a record may hold it; or S3 refused the
   * removal) it goes to the cleanup, which removes it, retrying until S3
   * answers, unless a record holds it by then. Only when even that hand-over
   * cannot be written does it stay: an unreachable orphan, logged.
   */
  private async dropFile(userId: string, id: string, { unheld }: { unheld: boolean }): Promise<void> {
    const key = fileKey(userId, id);
    if (unheld) {
      try {
        await this.files.remove(key);
        return;
      } catch {
        // S3 is failing: the cleanup retries.
      }
    }
    try {
      await this.store.handOverOrphanFile(userId, id);
    } catch (error) {
      logger.error('orphan file after failed upload', { attachment_id: id, key, error: String(error) });
    }
  }

  /** Cleanup: the records of every attachment of a conversation that is gone (their files follow). */
  removeAllOf(userId: string, conversationId: string): Promise<number> {
    return this.store.removeAllOf(userId, conversationId);
  }

  /** Cleanup: a failed upload's file (see dropFile), unless a record holds it after all. */
  async removeOrphanFile(userId: string, attachmentId: string): Promise<void> {
    if (await this.store.get(userId, attachmentId)) return;
    await this.files.remove(fileKey(userId, attachmentId));
  }

  /** Cleanup: the file of an attachment whose record is gone. Removing a file that is not there is not an error. */
  removeFile(userId: string, attachmentId: string): Promise<void> {
    return this.files.remove(fileKey(userId, attachmentId));
  }
}

const conversationMissing = (id: string) => referenceMissing('conversation_id', `No such conversation: ${id}`);

function notFound(id: string): never {
  throw resourceMissing('attachment', id);
}
