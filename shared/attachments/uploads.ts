import type { Caller } from '../caller.js';
import type { MemberConversations } from '../conversations/membership.js';
import { DeadlineExceeded, inFallback, invocationEndsAt } from '../deadline.js';
import { NotFound, ReferenceMissing } from '../domain-errors.js';
import { fileKey } from '../files/keys.js';
import type { FileStore } from '../files/model.js';
import { newSeed, seededId } from '../ids.js';
import { logger } from '../observability.js';
import { pendingPreview } from '../previews/sniff.js';
import { initialScan, type ScanSettings } from '../scanning/model.js';
import { type Clock, systemClock } from '../time.js';
import { type Attachment, type AttachmentRecord, type AttachmentStore, placementIn, type Upload, type UploadIntent } from './model.js';

/** What an upload asks of the attachment service: the uploader's view of a record, with its link minted now. */
export interface Relinks {
  relink(record: AttachmentRecord): Promise<Attachment>;
}

/**
 * The upload of an attachment through the API: its file, then its record.
 * The rule that keeps record and file consistent: a record only ever exists
 * while its file does, and a file only while a record or an upload intent
 * holds it. So an upload run writes its intent, then its file, then its
 * record in place of the intent; a file is removed only after what held it
 * is gone (from the table's stream, functions/cleanup.ts and
 * AttachmentLeftovers, however often that must retry). Each upload run
 * writes a key of its own, so one run's cleanup never removes another run's file.
 */
export class AttachmentUploads {
  constructor(
    private readonly store: AttachmentStore,
    private readonly attachments: Relinks,
    private readonly conversations: MemberConversations,
    private readonly files: FileStore,
    /** Whether an upload is scanned before others may read it (shared/scanning/model.ts). */
    private readonly scanning: Pick<ScanSettings, 'enabled'>,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * The conversation's membership check, the run's intent, the file, then
   * the record in one transaction with its conversation's check and the
   * intent's removal: an upload into a conversation that is gone, or being
   * deleted, keeps nothing and answers 400 resource_missing.
   */
  async upload(caller: Caller, upload: Upload, seed: string | undefined): Promise<Attachment> {
    // Before the file is written: a refusal (403 not_a_member, or a conversation that is not there) leaves nothing behind.
    // A conversation's counterpart never changes, so the transaction below needs only to check that it still exists.
    const side =
      upload.conversation_id === undefined
        ? undefined
        : await this.conversations.memberConversation(caller, upload.conversation_id, 'conversation_id');
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
      uploaded_by: caller.userId,
      placement: placementIn(side),
      file_key: fileKey(caller.userId, id, run),
      ...pendingPreview(upload.file.bytes),
      scan_status: initialScan(this.scanning),
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
      outcome = await this.store.add(record, caller.requestId, intent);
    } catch (error) {
      // The record may or may not have been written (every retry's answer was lost): ask.
      const stored = await inFallback(() => this.storedAfterFailure(record, intent));
      if (stored) return this.attachments.relink(stored);
      throw error;
    }
    if (outcome === 'added') return this.attachments.relink(record);
    // This run's file is not held: the record that is there (an earlier run's) or none holds another.
    await inFallback(() => this.abandon(intent));
    if (outcome === 'conversation-missing') throw conversationMissing(upload.conversation_id ?? '');
    // Only a run past its invocation's end meets its intent expired: its time is spent, nothing stored (503).
    if (outcome === 'intent-gone') throw new DeadlineExceeded();
    return this.attachments.relink((await this.store.get(id)) ?? notFound(id));
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
