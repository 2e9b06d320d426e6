import type { Groups } from '../auth/groups.js';
import { counterpartOf } from '../conversations/item-codec.js';
import {
  type MemberConversations,
  membersCounterpart,
  type Reader,
  seesAttachment,
  type ThreadSides,
} from '../conversations/membership.js';
import { DeadlineExceeded, inFallback, invocationEndsAt } from '../deadline.js';
import { NotFound, NotTheOwner, ReferenceMissing } from '../domain-errors.js';
import { threadKey, threadOf } from '../dynamo/keys.js';
import { fileKey } from '../files/keys.js';
import type { FileLinks, FileStore } from '../files/model.js';
import { newSeed, seededId } from '../ids.js';
import { logger } from '../observability.js';
import type { Page, PageRequest } from '../pagination.js';
import { type Clock, systemClock } from '../time.js';
import {
  type Attachment,
  type AttachmentRecord,
  type AttachmentStore,
  attachmentObject,
  type NotOwner,
  placementIn,
  type Upload,
  type UploadIntent,
} from './model.js';

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
    if (seesAttachment(reader, outcome.record.uploaded_by, outcome.record.placement?.counterpart ?? null))
      throw new NotTheOwner('attachment', id);
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
 * file consistent: a record only ever exists while its file does, and a file
 * only while a record or an upload intent holds it. So an upload run writes
 * its intent, then its file, then its record in place of the intent; a file
 * is removed only after what held it is gone (from the table's stream,
 * functions/cleanup.ts, however often that must retry). Each upload run
 * writes a key of its own, so one run's cleanup never removes another run's file.
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
   * The conversation's membership check, the run's intent, the file, then
   * the record in one transaction with its conversation's check and the
   * intent's removal: an upload into a conversation that is gone, or being
   * deleted, keeps nothing and answers 400 resource_missing.
   */
  async upload(userId: string, groups: Groups, upload: Upload, seed: string | undefined, requestId: string): Promise<Attachment> {
    // Before the file is written: a refusal (403 not_a_member, or a conversation that is not there) leaves nothing behind.
    // A conversation's counterpart never changes, so the transaction below needs only to check that it still exists.
    const side =
      upload.conversation_id === undefined
        ? undefined
        : await this.conversations.memberConversation(userId, groups, upload.conversation_id, 'conversation_id');
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
    const intent: UploadIntent = { attachmentId: id, run, fileKey: record.file_key, expiresAt: intentExpiry() };
    // Durable before the file exists: whatever fails from here on, the intent's removal (or expiry) hands the file to the cleanup.
    await this.store.intend(intent);
    try {
      await this.files.put(record.file_key, upload.file.bytes, record.file_type);
    } catch (error) {
      // Written or not (the answer may be what was lost): no record will hold it.
      await inFallback(() => this.abandon(intent));
      throw error;
    }
    let outcome: Awaited<ReturnType<AttachmentStore['add']>>;
    try {
      outcome = await this.store.add(record, requestId, intent);
    } catch (error) {
      // The record may or may not have been written (every retry's answer was lost): ask.
      const stored = await inFallback(() => this.storedAfterFailure(record, intent));
      if (stored) return this.relink(stored);
      throw error;
    }
    if (outcome === 'added') return this.relink(record);
    // This run's file is not held: the record that is there (an earlier run's) or none holds another.
    await inFallback(() => this.abandon(intent));
    if (outcome === 'conversation-missing') throw conversationMissing(upload.conversation_id ?? '');
    // Only a run past its invocation's end meets its intent expired: its time is spent, nothing stored (503).
    if (outcome === 'intent-gone') throw new DeadlineExceeded();
    return this.relink((await this.store.get(id)) ?? notFound(id));
  }

  /**
   * After a failed record write: the intent is removed first, so that no
   * attempt still in flight can commit after the answer below (its
   * transaction needs the intent); then the record, if it is there after
   * all (this run's, or an earlier run's of its Idempotency-Key: either
   * holds its own file), is the answer. Neither reachable: undefined (503),
   * and the intent's expiry hands the file over.
   */
  private async storedAfterFailure(record: AttachmentRecord, intent: UploadIntent): Promise<AttachmentRecord | undefined> {
    await this.abandon(intent);
    try {
      return await this.store.get(record.id);
    } catch (error) {
      logger.warn('upload outcome unknown', { attachment_id: record.id, error });
      return undefined;
    }
  }

  /**
   * A failed upload run's file goes to the cleanup: its intent is removed,
   * and the cleanup removes the file (retrying until S3 answers) unless the
   * record holds it. When the removal fails too, the intent expires after
   * the invocation, with the same effect, later.
   */
  private async abandon(intent: UploadIntent): Promise<void> {
    try {
      await this.store.abandon(intent);
    } catch (error) {
      logger.warn('upload intent left to its expiry', {
        attachment_id: intent.attachmentId,
        key: intent.fileKey,
        expires_at: intent.expiresAt,
        error,
      });
    }
  }

  /** Cleanup: the records of every attachment the user uploaded into a conversation that is gone (their files follow). */
  removeAllOf(userId: string, conversationId: string): Promise<number> {
    return this.store.removeAllOf(userId, conversationId);
  }

  /**
   * Cleanup: the file of an upload run whose intent is gone, unless the
   * record holds it (its transaction removed the intent). No record can come
   * to hold it later: that transaction needs the intent.
   */
  async removeUnheldFile(attachmentId: string, key: string): Promise<void> {
    if ((await this.store.get(attachmentId))?.file_key === key) return;
    await this.files.remove(key);
  }

  /** Cleanup: the file of an attachment whose record is gone. Removing a file that is not there is not an error. */
  removeFile(key: string): Promise<void> {
    return this.files.remove(key);
  }
}

/**
 * How long an upload's intent must outlive its run: a PUT sent just before
 * the invocation ended may still be stored by S3 a moment later, and the
 * cleanup must come after it.
 */
const INTENT_GRACE_MS = 10_000;
/** Outside a Lambda invocation (scripts, the bench's direct calls): Lambda's longest. */
// A literal, not 15 * 60_000: esbuild keeps a top-level arithmetic initialiser in every bundle that imports the module.
const LONGEST_INVOCATION_MS = 900_000;

/** The intent's expires_at (epoch seconds, on the wall clock as DynamoDB's TTL reads it, whatever the domain's clock says). */
const intentExpiry = (): number => Math.ceil(((invocationEndsAt() ?? Date.now() + LONGEST_INVOCATION_MS) + INTENT_GRACE_MS) / 1000);

const conversationMissing = (id: string) => new ReferenceMissing('conversation_id', `No such conversation: ${id}`);

function notFound(id: string): never {
  throw new NotFound('attachment', id);
}
