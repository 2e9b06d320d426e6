import type { ConversationDependent } from '../conversations/model.js';
import { fileKey } from '../dynamo/keys.js';
import { referenceMissing, resourceMissing } from '../http/errors.js';
import { newId } from '../ids.js';
import type { Page, PageRequest } from '../pagination.js';
import { logger } from '../observability.js';
import { nowSeconds } from '../time.js';
import type { Attachment, AttachmentFilter, AttachmentRecord, AttachmentStore, FileLinks, FileStore, Upload } from './model.js';

/** What an upload into a conversation needs of the conversations. */
export interface ConversationActivity {
  /** Whether the user has this conversation, and if so, mark it active now. */
  markActive(userId: string, conversationId: string, at: number): Promise<boolean>;
}

/**
 * What the endpoints that show attachments do: records plus a link minted for
 * each response. No file store: these functions never touch the bytes, so
 * their bundles carry no S3 client.
 */
export class AttachmentViews {
  constructor(
    protected readonly store: AttachmentStore,
    private readonly links: FileLinks,
  ) {}

  async getAttachment(userId: string, id: string): Promise<Attachment> {
    return this.withLink(userId, (await this.store.get(userId, id)) ?? notFound(id));
  }

  /** Metadata only: the file and its key stay; the next link carries the new name. */
  async renameAttachment(userId: string, id: string, filename: string): Promise<Attachment> {
    return this.withLink(userId, (await this.store.rename(userId, id, filename)) ?? notFound(id));
  }

  async listAttachments(userId: string, filter: AttachmentFilter, page: PageRequest): Promise<Page<Attachment>> {
    const { has_more, data } = await this.store.list(userId, filter, page);
    return { has_more, data: await Promise.all(data.map((record) => this.withLink(userId, record))) };
  }

  /** The attachment with a file_url minted now (a replayed upload shows a live link). */
  relink(userId: string, record: AttachmentRecord): Promise<Attachment> {
    return this.withLink(userId, record);
  }

  protected async withLink(userId: string, record: AttachmentRecord): Promise<Attachment> {
    const file_url = await this.links.download(fileKey(userId, record.id), {
      filename: record.filename,
      fileType: record.file_type,
    });
    const { id, message_id, conversation_id, filename, file_type, file_size, created_at } = record;
    return { id, message_id, conversation_id, filename, file_url, file_type, file_size, created_at };
  }
}

/**
 * What the endpoints that write attachments do. The rule that keeps record and
 * file consistent: a record only ever exists while its file does. So a file is
 * written before its record and removed after it; a failure in between leaves
 * at worst a file with no record, which no response can reach.
 */
export class AttachmentService extends AttachmentViews implements ConversationDependent {
  constructor(
    store: AttachmentStore,
    links: FileLinks,
    private readonly files: FileStore,
    private readonly conversations: ConversationActivity,
  ) {
    super(store, links);
  }

  async upload(userId: string, upload: Upload): Promise<Attachment> {
    const now = nowSeconds();
    // The conditional update is also the ownership check, done before anything is written.
    if (upload.conversation_id !== undefined && !(await this.conversations.markActive(userId, upload.conversation_id, now))) {
      throw referenceMissing('conversation_id', `No such conversation: ${upload.conversation_id}`);
    }
    const record: AttachmentRecord = {
      id: newId('att'),
      message_id: upload.message_id ?? null,
      conversation_id: upload.conversation_id ?? null,
      filename: upload.file.filename,
      file_type: upload.file.fileType,
      file_size: upload.file.bytes.length,
      created_at: now,
    };
    const key = fileKey(userId, record.id);
    await this.files.put(key, upload.file.bytes, record.file_type);
    try {
      await this.store.add(userId, record);
    } catch (error) {
      await this.discardFile(key, record.id);
      throw error;
    }
    return this.withLink(userId, record);
  }

  async deleteAttachment(userId: string, id: string): Promise<void> {
    if (!(await this.removeRecordThenFile(userId, id))) notFound(id);
  }

  /** Every attachment of the conversation, records and files, however many there are. */
  async removeAllOf(userId: string, conversationId: string): Promise<void> {
    for await (const batch of this.store.batchesOf(userId, conversationId)) {
      await Promise.all(batch.map((record) => this.removeRecordThenFile(userId, record.id)));
    }
  }

  private async removeRecordThenFile(userId: string, id: string): Promise<boolean> {
    if (!(await this.store.remove(userId, id))) return false;
    await this.files.remove(fileKey(userId, id));
    return true;
  }

  /** Best effort: if S3 refuses this too, the file is an orphan nobody can reach, and the log says which. */
  private async discardFile(key: string, attachmentId: string): Promise<void> {
    try {
      await this.files.remove(key);
    } catch (error) {
      logger.error('orphan file after failed upload', { attachment_id: attachmentId, key, error: String(error) });
    }
  }
}

function notFound(id: string): never {
  throw resourceMissing('attachment', id);
}
