import { setTimeout as sleep } from 'node:timers/promises';
import { type Attachment, type AttachmentRecord, placementIn } from '../attachments/model.js';
import type { Caller } from '../caller.js';
import type { MemberConversations } from '../conversations/membership.js';
import { inFallback } from '../deadline.js';
import { NotFound, ReferenceMissing } from '../domain-errors.js';
import { WriteContention } from '../dynamo/busy-retry.js';
import { fileKey } from '../files/keys.js';
import type { CompletedPart, MultipartFileStore, StoredPart } from '../files/model.js';
import { newId } from '../ids.js';
import { logger } from '../observability.js';
import { pendingPreview } from '../previews/sniff.js';
import { initialScan, type ScanSettings } from '../scanning/model.js';
import { type Clock, systemClock } from '../time.js';
import {
  conversationGone,
  partNumberOutOfRange,
  partsRefused,
  sessionCompleted,
  sessionExpired,
  sessionFailed,
  sizeMismatch,
} from './errors.js';
import type {
  PartUrl,
  SessionCompletionStore,
  SessionFailure,
  SessionRecord,
  SessionRequest,
  UploadSession,
  UploadSessionStore,
} from './model.js';
import { planParts } from './part-plan.js';

/** How long a completion waits for a concurrent one that is assembling the same file, and how often it looks. */
const BUSY_WAIT_MS = 10_000;
const BUSY_POLL_MS = 100;

/**
 * What a completion needs of the conversations and the attachments, and its transaction. A parameter of
 * start (the conversations) and complete, not wiring: get, sign-parts and abort bundle none of it, start
 * only the conversation reads (test/infra/bundling.test.ts).
 */
export interface SessionNeighbours extends MemberConversations {
  /** The transaction that closes the session and creates its attachment. */
  completion: SessionCompletionStore;
  getAttachment(caller: Caller, id: string): Promise<Attachment>;
  /** The uploader's view of the attachment, with its file_url minted now. */
  relink(record: AttachmentRecord): Promise<Attachment>;
}

/**
 * Reads a file's type from its first bytes. A parameter of complete, not
 * wiring: only the complete function bundles the format table (file-type).
 */
export interface Sniffer {
  bytesNeeded: number;
  sniff(firstBytes: Uint8Array): Promise<string | undefined>;
}

export interface SessionSettings {
  sessionTtlSeconds: number;
  /** How long a presigned part URL is valid (never past the session's expiry). */
  partUrlTtlSeconds: number;
  /** Whether a completed file is scanned before others may read it (shared/scanning/model.ts). */
  scanning: Pick<ScanSettings, 'enabled'>;
}

/**
 * Upload sessions: a file goes to S3 in parts, presigned per part, and
 * becomes an attachment only when completed and verified (size, type).
 *
 * The rules that keep records and files consistent: the S3 object lives under
 * the attachment's own key from the start; the attachment record appears in
 * the same transaction that closes the session, with its conversation
 * checked; and whatever refuses the file (size, deleted conversation, abort)
 * removes the object before it answers.
 */
export class UploadSessionService {
  constructor(
    private readonly sessions: UploadSessionStore,
    private readonly files: MultipartFileStore,
    private readonly settings: SessionSettings,
    /** "Now" for creation and expiry: the Composition's, so tests move time instead of sleeping. */
    private readonly clock: Clock = systemClock,
  ) {}

  async start(caller: Caller, request: SessionRequest, conversations: MemberConversations): Promise<UploadSession> {
    if (
      request.conversation_id !== undefined &&
      !(await conversations.memberConversation(caller, request.conversation_id, 'conversation_id'))
    ) {
      throw new ReferenceMissing('conversation_id', `No such conversation: ${request.conversation_id}`);
    }
    const now = this.clock();
    const id = newId('upl');
    const attachmentId = newId('att');
    const key = fileKey(caller.userId, attachmentId, id);
    const uploadId = await this.files.startMultipart(key, request.file_type);
    const record: SessionRecord = {
      id,
      status: 'pending',
      filename: request.filename,
      file_size: request.file_size,
      file_type: request.file_type,
      ...planParts(request.file_size),
      expires_at: now + this.settings.sessionTtlSeconds,
      conversation_id: request.conversation_id ?? null,
      message_id: request.message_id ?? null,
      created_at: now,
      attachment_id: attachmentId,
      upload_id: uploadId,
    };
    try {
      await this.sessions.add(caller.userId, record);
    } catch (error) {
      // No session points at the upload: abort it now rather than leave it to the lifecycle rule.
      await inFallback(() => this.files.abortMultipart(key, uploadId)).catch(() => undefined);
      throw error;
    }
    return sessionView(record, now);
  }

  async getSession(caller: Caller, id: string): Promise<UploadSession & { parts: StoredPart[] }> {
    const { userId } = caller;
    const record = await this.load(userId, id);
    const session = sessionView(record, this.clock());
    const parts = session.status === 'pending' ? await this.files.listParts(keyOf(userId, record), record.upload_id) : [];
    return { ...session, parts };
  }

  async signParts(caller: Caller, id: string, partNumbers: readonly number[]): Promise<PartUrl[]> {
    const { userId } = caller;
    const record = await this.load(userId, id);
    const now = this.clock();
    assertOpen(record, now);
    if (partNumbers.some((number) => number > record.part_count)) throw partNumberOutOfRange('part_numbers', record.part_count);
    const ttl = Math.min(this.settings.partUrlTtlSeconds, record.expires_at - now);
    return Promise.all(
      partNumbers.map(async (part_number) => {
        const { url, expiresIn } = await this.files.presignUploadPart(keyOf(userId, record), record.upload_id, part_number, ttl);
        return { part_number, url, expires_at: now + expiresIn };
      }),
    );
  }

  /**
   * Assembles, verifies, then records. Safe to repeat and to race: S3's
   * assembly happens at most once (a repeat finds the object), and only one
   * transaction closes the session; every other caller answers the attachment
   * it created.
   */
  async complete(
    caller: Caller,
    id: string,
    parts: readonly CompletedPart[],
    sniffer: Sniffer,
    neighbours: SessionNeighbours,
  ): Promise<Attachment> {
    const { userId } = caller;
    const record = await this.load(userId, id);
    // A repeat answers the user's own attachment, group or not (it is theirs to get).
    if (record.status === 'completed') return neighbours.getAttachment(caller, record.attachment_id);
    const now = this.clock();
    assertOpen(record, now);
    // Before S3 assembles anything: a refusal leaves the session pending, to complete again as a member or to expire.
    const side = record.conversation_id === null ? undefined : await neighbours.memberConversation(caller, record.conversation_id);
    // Gone meanwhile: the file can go nowhere. (Gone later still, the completing transaction finds it, below.)
    if (record.conversation_id !== null && !side) {
      await this.files.abortMultipart(keyOf(userId, record), record.upload_id);
      return this.refuse(userId, record, conversationGone(record.conversation_id));
    }
    if (parts.some((part) => part.part_number > record.part_count)) throw partNumberOutOfRange('parts', record.part_count);
    const key = keyOf(userId, record);

    const assembly = await this.files.assemble(key, record.upload_id, parts);
    if (typeof assembly === 'object') throw partsRefused(assembly.message);
    const size = await this.files.sizeOf(key);
    // Gone even right after S3 assembled it: an abort, or the cleanup of a session removed meanwhile, took it away.
    if (size === undefined) return this.afterVanishedUpload(caller, id, neighbours);
    if (size !== record.file_size) return this.refuse(userId, record, sizeMismatch(record.file_size, size));

    const firstBytes = await this.files.firstBytes(key, sniffer.bytesNeeded);
    // Gone between the size and the bytes: the same race, one step later.
    if (firstBytes === undefined) return this.afterVanishedUpload(caller, id, neighbours);
    const sniffed = await sniffer.sniff(firstBytes);
    const attachment: AttachmentRecord = {
      id: record.attachment_id,
      message_id: record.message_id,
      filename: record.filename,
      // The bytes win over the declared type when they prove a format (docs/decisions.md, "Upload sessions").
      file_type: sniffed ?? record.file_type,
      file_size: size,
      created_at: now,
      uploaded_by: userId,
      placement: placementIn(side),
      file_key: key,
      ...pendingPreview(firstBytes),
      scan_status: initialScan(this.settings.scanning),
    };
    const outcome = await neighbours.completion.complete(userId, id, attachment, caller.requestId);
    if (outcome === 'completed') return neighbours.relink(attachment);
    if (outcome === 'conversation_missing') return this.refuse(userId, record, conversationGone(record.conversation_id ?? ''));
    // Someone else closed the session meanwhile: a concurrent complete (answer its attachment) or an abort.
    const current = await this.sessions.get(userId, id);
    if (current?.status === 'completed') return neighbours.getAttachment(caller, current.attachment_id);
    await this.discardFile(key, id);
    if (current?.status === 'failed' && current.failure) throw sessionFailed(current.failure);
    throw new NotFound('upload_session', id);
  }

  /**
   * Neither the upload nor its object exists: another completion finished
   * (answer its attachment) or is assembling right now (retry), an abort or
   * the removal of the session record (and its cleanup) took them, or S3's
   * lifecycle rule aborted an expired upload.
   */
  private async afterVanishedUpload(caller: Caller, id: string, neighbours: SessionNeighbours): Promise<Attachment> {
    for (let waited = 0; ; waited += BUSY_POLL_MS) {
      const current = await this.load(caller.userId, id);
      if (current.status === 'completed') return neighbours.getAttachment(caller, current.attachment_id);
      assertOpen(current, this.clock());
      // Another completion still assembling: contention (429, retry shortly), and an Idempotency-Key is freed for the retry.
      if (waited >= BUSY_WAIT_MS) throw new WriteContention();
      await sleep(BUSY_POLL_MS);
    }
  }

  /** Aborts: the parts (and an assembled object not yet an attachment) are removed. */
  async abort(caller: Caller, id: string): Promise<void> {
    const { userId } = caller;
    const removed = await this.sessions.removeUnlessCompleted(userId, id);
    if (!removed) {
      // Either nothing of the user's, or completed: a completed session's file is an attachment, deleted as one.
      if ((await this.load(userId, id)).status === 'completed') throw sessionCompleted(id);
      throw new NotFound('upload_session', id);
    }
    // The record goes first: a completion racing with this abort then fails its transaction and removes the file itself.
    const key = keyOf(userId, removed);
    await this.files.abortMultipart(key, removed.upload_id);
    await this.files.remove(key);
  }

  private async load(userId: string, id: string): Promise<SessionRecord> {
    return (await this.sessions.get(userId, id)) ?? notFound(id);
  }

  /** The file is refused for good: it goes, the session remembers why, and the answer says so. */
  private async refuse(userId: string, record: SessionRecord, failure: SessionFailure): Promise<never> {
    await this.files.remove(keyOf(userId, record));
    await this.sessions.fail(userId, record.id, failure);
    throw sessionFailed(failure);
  }

  private async discardFile(key: string, sessionId: string): Promise<void> {
    try {
      await this.files.remove(key);
    } catch (error) {
      logger.error('orphan file after a closed upload session', { upload_session_id: sessionId, key, error });
    }
  }
}

/** Refuses parts and completion once the session is closed or past its expiry. */
function assertOpen(record: SessionRecord, now: number): void {
  if (record.status === 'completed') throw sessionCompleted(record.id);
  if (record.status === 'failed' && record.failure) throw sessionFailed(record.failure);
  if (now >= record.expires_at) throw sessionExpired(record.id);
}

export function sessionView(record: SessionRecord, now: number): UploadSession {
  const { id, filename, file_size, file_type, part_size, part_count, expires_at, conversation_id, message_id, created_at } = record;
  const status = record.status === 'pending' && now >= expires_at ? 'expired' : record.status;
  return { id, status, filename, file_size, file_type, part_size, part_count, expires_at, conversation_id, message_id, created_at };
}

/** The session's object: under its attachment's id, the session being the run that writes it. */
const keyOf = (userId: string, record: SessionRecord) => fileKey(userId, record.attachment_id, record.id);

function notFound(id: string): never {
  throw new NotFound('upload_session', id);
}
