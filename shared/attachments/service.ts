import type { Caller } from '../caller.js';
import { counterpartOf } from '../conversations/item-codec.js';
import { type MemberConversations, membersCounterpart, seesAttachment, type ThreadSides } from '../conversations/membership.js';
import { NotFound, NotTheOwner } from '../domain-errors.js';
import { threadKey, threadOf } from '../dynamo/keys.js';
import type { FileLinks } from '../files/model.js';
import type { Page, PageRequest } from '../pagination.js';
import { previewView } from '../previews/view.js';
import { fileAccess, type ScanSettings } from '../scanning/model.js';
import { type Attachment, type AttachmentRecord, type AttachmentStore, attachmentObject, type NotOwner } from './model.js';

/** What the attachments ask of the conversations: membership of the user's own, and a member's side of a thread. */
export type AttachmentConversations = MemberConversations & ThreadSides;

/**
 * What the attachment endpoints that never touch the bytes do (get, list,
 * rename, delete): records, each shown to whom may see it (docs/api.md,
 * "Sharing"), with a link minted for each response. No file store, so their
 * bundles carry no S3 client. A delete removes the record only: the file
 * follows from the table's stream (functions/cleanup.ts, AttachmentLeftovers).
 * The upload, which writes files, is AttachmentUploads.
 */
export class AttachmentService {
  constructor(
    private readonly store: AttachmentStore,
    private readonly links: FileLinks,
    private readonly conversations: AttachmentConversations,
    /** Whom a file not yet clean reaches (shared/scanning/model.ts). */
    private readonly scanning: Pick<ScanSettings, 'serveUnscannable'>,
  ) {}

  /**
   * The uploader's, or a thread member's: at most two reads (the record by
   * its id, and a member's own side for conversation_id). Anyone else: 404.
   */
  async getAttachment(caller: Caller, id: string): Promise<Attachment> {
    const record = await this.store.get(id);
    if (!record || !seesAttachment(caller, record.uploaded_by, record.placement?.counterpart ?? null)) notFound(id);
    return this.view(record, await this.callersSide(caller, record), caller.userId);
  }

  /** Metadata only, by the uploader: the file and its key stay; every member's next link carries the new name. */
  async renameAttachment(caller: Caller, id: string, filename: string): Promise<Attachment> {
    const renamed = this.owned(caller, id, await this.store.rename(caller.userId, id, filename, caller.requestId));
    return this.view(renamed, renamed.placement?.conversation_id ?? null, caller.userId);
  }

  /** By the uploader: the record goes now, for every member; the file follows from the table's stream. */
  async deleteAttachment(caller: Caller, id: string): Promise<void> {
    const removed = await this.store.remove(caller.userId, id, caller.requestId);
    if (removed !== true) this.owned(caller, id, removed || undefined);
  }

  /**
   * With conversation_id (one of the user's conversations; a group's needs
   * the group in the token): every member's attachments of its thread.
   * Another user's conversation id lists nothing. Without: the user's own uploads.
   */
  async listAttachments(caller: Caller, filter: { conversation_id?: string }, page: PageRequest): Promise<Page<Attachment>> {
    if (filter.conversation_id === undefined) {
      const uploads = await this.store.listUploads(caller.userId, page);
      return this.views(uploads, (record) => record.placement?.conversation_id ?? null, caller.userId);
    }
    const side = await this.conversations.memberConversation(caller, filter.conversation_id, 'conversation_id');
    if (!side) return { has_more: false, data: [] };
    const thread = await this.store.listThread(threadKey(threadOf(caller.userId, counterpartOf(side))), page);
    return this.views(thread, () => side.id, caller.userId);
  }

  /** The uploader's view with a file_url minted now (a replayed upload shows a live link). */
  relink(record: AttachmentRecord): Promise<Attachment> {
    return this.view(record, record.placement?.conversation_id ?? null, record.uploaded_by);
  }

  /**
   * A replayed upload's attachment as it is now, with a live link (the link
   * is never stored, and the file's key is the record's). Deleted by its
   * uploader since: 404, as any GET of it.
   */
  async replayed(uploader: Caller, id: string): Promise<Attachment> {
    const record = await this.store.get(id);
    if (!record || record.uploaded_by !== uploader.userId) notFound(id);
    return this.relink(record);
  }

  /** A rename's or removal's outcome: the uploader's record, else 403 for a member who sees it and 404 for anyone else. */
  private owned(caller: Caller, id: string, outcome: AttachmentRecord | NotOwner | undefined): AttachmentRecord {
    if (outcome === undefined) notFound(id);
    if (!('refused' in outcome)) return outcome;
    if (seesAttachment(caller, outcome.record.uploaded_by, outcome.record.placement?.counterpart ?? null))
      throw new NotTheOwner('attachment', id);
    notFound(id);
  }

  /** The caller's side of the record's thread: stored for the uploader, one read for another member. */
  private async callersSide(caller: Caller, record: AttachmentRecord): Promise<string | null> {
    if (caller.userId === record.uploaded_by || !record.placement) return record.placement?.conversation_id ?? null;
    return (await this.conversations.sideOf(caller.userId, membersCounterpart(record.uploaded_by, record.placement.counterpart))) ?? null;
  }

  private async views(
    page: Page<AttachmentRecord>,
    sideOf: (record: AttachmentRecord) => string | null,
    readerId: string,
  ): Promise<Page<Attachment>> {
    return { has_more: page.has_more, data: await Promise.all(page.data.map((record) => this.view(record, sideOf(record), readerId))) };
  }

  /** The record as `readerId` sees it: links minted only for what scanning lets that reader download. */
  private async view(record: AttachmentRecord, conversationId: string | null, readerId: string): Promise<Attachment> {
    const access = fileAccess(record.scan_status, readerId === record.uploaded_by, this.scanning);
    const link =
      access === 'full' ? await this.links.download(record.file_key, { filename: record.filename, fileType: record.file_type }) : undefined;
    const {
      id,
      message_id,
      conversation_id,
      filename,
      preview: _shown,
      scan_status,
      ...rest
    } = attachmentObject(record, conversationId, access);
    const preview = await previewView(record.preview, this.links, access);
    // The link after the name, in the order of the documented object.
    const file = { file_url: link?.url ?? null, file_url_expires_at: link?.expiresAt ?? null };
    return { id, message_id, conversation_id, filename, ...file, ...rest, preview, scan_status };
  }
}

function notFound(id: string): never {
  throw new NotFound('attachment', id);
}
