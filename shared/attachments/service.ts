import type { Groups } from '../auth/groups.js';
import { counterpartOf } from '../conversations/item-codec.js';
import { membersCounterpart, seesAttachment, type MemberConversations, type Reader, type ThreadSides } from '../conversations/membership.js';
import { threadKey, threadOf } from '../dynamo/keys.js';
import { inFallback } from '../deadline.js';
import { fileKey } from '../files/keys.js';
import { notOwner, referenceMissing, resourceMissing } from '../http/errors.js';
import { newSeed, seededId } from '../ids.js';
import type { Page, PageRequest } from '../pagination.js';
import { logger } from '../observability.js';
import { systemClock, type Clock } from '../time.js';
import { attachmentObject, placementIn, type Attachment, type AttachmentRecord, type AttachmentStore, type NotOwner, type Upload } from './model.js';
import type { FileLinks, FileStore } from '../files/model.js';

/** What the attachments ask of the conversations: membership of the user's own, and the reader's side of a thread. */
export type AttachmentConversations = MemberConversations & ThreadSides;

/**
 * What the attachment endpoints that never touch the bytes do: records, each
 * shown to its reader (docs/api.md, "Sharing"), with a link minted for each
 * response. No file store, so their bundles carry no S3 client. A delete is
 * one of them: it removes the record only, and the file follows from the
 * table's stream (functions/cleanup.ts).
 */
export class AttachmentViews {
  constructor(
    protected readonly store: AttachmentStore,
    private readonly links: FileLinks,
    protected readonly conversations: AttachmentConversations,
  ) {}

  /**
   * The uploader's, or a thread member's: at most two reads (the record by
   * its id, and a member's own side for conversation_id). Anyone else: 404.
   */
  async getAttachment(reader: Reader, id: string): Promise<Attachment> {
    const record = await this.store.get(id);
    if (!record || !seesAttachment(reader, record.uploaded_by, record.placement?.counterpart ?? null)) notFound(id);
    return this.view(record, await this.readersSide(reader, record));
  }

  /** Metadata only, by the uploader: the file and its key stay; every member's next link carries the new name. */
  async renameAttachment(reader: Reader, id: string, filename: string, requestId: string): Promise<Attachment> {
    const renamed = this.owned(reader, id, await this.store.rename(reader.userId, id, filename, requestId));
    return this.view(renamed, renamed.placement?.conversation_id ?? null);
  }

  /** By the uploader: the record goes now, for every member; the file follows from the table's stream. */
  async deleteAttachment(reader: Reader, id: string, requestId: string): Promise<void> {
    const removed = await this.store.remove(reader.userId, id, requestId);
    if (removed !== true) this.owned(reader, id, removed || undefined);
  }

  /**
   * With conversation_id (one of the user's conversations; a group's needs
   * the group in the token): every member's attachments of its thread.
   * Another user's conversation id lists nothing. Without: the user's own uploads.
   */
  async listAttachments(reader: Reader, filter: { conversation_id?: string }, page: PageRequest): Promise<Page<Attachment>> {
    if (filter.conversation_id === undefined) {
      const uploads = await this.store.listUploads(reader.userId, page);
      return this.views(uploads, (record) => record.placement?.conversation_id ?? null);
    }
    const side = await this.conversations.memberConversation(reader.userId, reader.groups, filter.conversation_id, 'conversation_id');
    if (!side) return { has_more: false, data: [] };
    const thread = await this.store.listThread(threadKey(threadOf(reader.userId, counterpartOf(side))), page);
    return this.views(thread, () => side.id);
  }

  /** The uploader's view with a file_url minted now (a replayed upload shows a live link). */
  relink(record: AttachmentRecord): Promise<Attachment> {
    return this.view(record, record.placement?.conversation_id ?? null);
  }

  /**
   * A replayed upload's attachment as it is now, with a live link (the link
   * is never stored, and the file's key is the record's). Deleted by its
   * uploader since: 404, as any GET of it.
   */
  async replayed(uploaderId: string, id: string): Promise<Attachment> {
    const record = await this.store.get(id);
    if (!record || record.uploaded_by !== uploaderId) notFound(id);
    return this.relink(record);
  }

  /** A rename's or removal's outcome: the uploader's record, else 403 for a member who sees it and 404 for anyone else. */
  private owned(reader: Reader, id: string, outcome: AttachmentRecord | NotOwner | undefined): AttachmentRecord {
    if (outcome === undefined) notFound(id);
    if (!('refused' in outcome)) return outcome;
    if (seesAttachment(reader, outcome.record.uploaded_by, outcome.record.placement?.counterpart ?? null)) throw notOwner('attachment', id);
    notFound(id);
  }

  /** The reader's side of the record's thread: stored for the uploader, one read for another member. */
  private async readersSide(reader: Reader, record: AttachmentRecord): Promise<string | null> {
    if (reader.userId === record.uploaded_by || !record.placement) return record.placement?.conversation_id ?? null;
    return (await this.conversations.sideOf(reader.userId, membersCounterpart(record.uploaded_by, record.placement.counterpart))) ?? null;
  }

  private async views(page: Page<AttachmentRecord>, sideOf: (record: AttachmentRecord) => string | null): Promise<Page<Attachment>> {
    return { has_more: page.has_more, data: await Promise.all(page.data.map((record) => this.view(record, sideOf(record)))) };
  }

  protected async view(record: AttachmentRecord, conversationId: string | null): Promise<Attachment> {
    const link = await this.links.download(record.file_key, { filename: record.filename, fileType: record.file_type });
    const { id, message_id, conversation_id, filename, ...rest } = attachmentObject(record, conversationId);
    // The link after the name, in the order of the documented object.
    return { id, message_id, conversation_id, filename, file_url: link.url, file_url_expires_at: link.expiresAt, ...rest };
  }
}

/**
 * What writes and removes attachment files: the upload, and the cleanup that
 * follows deletes from the tables' streams. The rule that keeps record and
 * file consistent: a record only ever exists while its file does. So a file is
 * written before its record, and removed only after its record is gone (from
 * the table's stream, functions/cleanup.ts, however often that must retry).
 * Each upload run writes a key of its own, so one run's cleanup never
 * removes another run's file.
 */
export class AttachmentService extends AttachmentViews {
  constructor(
    store: AttachmentStore,
    links: FileLinks,
    conversations: AttachmentConversations,
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
  async upload(userId: string, groups: Groups, upload: Upload, seed: string | undefined, requestId: string): Promise<Attachment> {
    // Before the file is written: a refusal (403 not_a_member, or a conversation that is not there) leaves nothing behind.
    // A conversation's counterpart never changes, so the transaction below needs only to check that it still exists.
    const side = upload.conversation_id === undefined ? undefined : await this.conversations.memberConversation(userId, groups, upload.conversation_id, 'conversation_id');
    if (upload.conversation_id !== undefined && !side) throw conversationMissing(upload.conversation_id);
    // Seeded (Idempotency-Key): a retry after an unknown outcome writes the same id and finds its record.
    const id = seededId('att', seed);
    const run = newSeed();
    const record: AttachmentRecord = {
      id,
      message_id: upload.message_id ?? null,
      filename: upload.file.filename,
      file_type: upload.file.fileType,
      file_size: upload.file.bytes.length,
      created_at: this.clock(),
      uploaded_by: userId,
      placement: placementIn(side),
      file_key: fileKey(userId, id, run),
    };
    try {
      await this.files.put(record.file_key, upload.file.bytes, record.file_type);
    } catch (error) {
      // Written or not (the answer may be what was lost): no record will hold it.
      await inFallback(() => this.dropFile(record, run, { unheld: false }));
      throw error;
    }
    let outcome: 'added' | 'existed' | 'conversation-missing';
    try {
      outcome = await this.store.add(record, requestId);
    } catch (error) {
      // The record may or may not have been written (every retry's answer was lost): ask.
      const stored = await inFallback(() => this.storedAfterFailure(record, run));
      if (stored) return this.relink(stored);
      throw error;
    }
    if (outcome === 'added') return this.relink(record);
    // This run's file is not held: the record that is there (an earlier run's) or none holds another.
    await inFallback(() => this.dropFile(record, run, { unheld: true }));
    if (outcome === 'conversation-missing') throw conversationMissing(upload.conversation_id ?? '');
    return this.relink((await this.store.get(id)) ?? notFound(id));
  }

  /** After a failed record write: the record if it is there after all; when it is not this run's (or that cannot be known), this run's file is dropped. */
  private async storedAfterFailure(record: AttachmentRecord, run: string): Promise<AttachmentRecord | undefined> {
    let stored: AttachmentRecord | undefined;
    try {
      stored = await this.store.get(record.id);
    } catch (error) {
      logger.warn('upload outcome unknown', { attachment_id: record.id, error: String(error) });
    }
    if (stored?.file_key !== record.file_key) await this.dropFile(record, run, { unheld: false });
    return stored;
  }

  /**
   * A failed upload run's file. When it is surely there and no record can
   * hold it (`unheld`), it is removed at once. Otherwise (its PUT's outcome
   * is unknown, and a delayed PUT could still land; or a record may hold it;
   * or S3 refused the removal) it goes to the cleanup, which removes it,
   * retrying until S3 answers, unless the record holds it by then. Only when
   * even that hand-over cannot be written does it stay: an unreachable
   * orphan, logged.
   */
  private async dropFile(record: AttachmentRecord, run: string, { unheld }: { unheld: boolean }): Promise<void> {
    if (unheld) {
      try {
        await this.files.remove(record.file_key);
        return;
      } catch {
        // S3 is failing: the cleanup retries.
      }
    }
    try {
      await this.store.handOverOrphanFile(record.id, run, record.file_key);
    } catch (error) {
      logger.error('orphan file after failed upload', { attachment_id: record.id, key: record.file_key, error: String(error) });
    }
  }

  /** Cleanup: the records of every attachment the user uploaded into a conversation that is gone (their files follow). */
  removeAllOf(userId: string, conversationId: string): Promise<number> {
    return this.store.removeAllOf(userId, conversationId);
  }

  /** Cleanup: a failed upload run's file (see dropFile), unless the record holds it after all. */
  async removeOrphanFile(attachmentId: string, key: string): Promise<void> {
    if ((await this.store.get(attachmentId))?.file_key === key) return;
    await this.files.remove(key);
  }

  /** Cleanup: the file of an attachment whose record is gone. Removing a file that is not there is not an error. */
  removeFile(key: string): Promise<void> {
    return this.files.remove(key);
  }
}

const conversationMissing = (id: string) => referenceMissing('conversation_id', `No such conversation: ${id}`);

function notFound(id: string): never {
  throw resourceMissing('attachment', id);
}
