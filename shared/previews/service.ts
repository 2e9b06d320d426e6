import type { AttachmentRecord, AttachmentStore } from '../attachments/model.js';
import { thumbnailKey, thumbnailKeys } from '../files/keys.js';
import type { FileStore, MultipartFileStore } from '../files/model.js';
import { logger } from '../observability.js';
import { type RenderedPreview, type Renderer, type SettledPreview, Undecodable } from './model.js';

/** What the fan-out queues for the worker: the record and the file it was uploaded with. */
export interface PreviewRequest {
  attachment_id: string;
  file_key: string;
}

/** What a request came to. */
export type PreviewOutcome = 'ready' | 'failed' | 'not-pending' | 'gone';

/**
 * The preview worker's one job (docs/api.md, "Previews"): a pending preview
 * settled once, `ready` with its thumbnails stored, or `failed` when the
 * file is the cause. A backend that fails (S3, DynamoDB) throws: the queue
 * delivers the request again, and every step is safe to repeat (the
 * thumbnails' keys are the file's, the record's write is conditional on
 * `pending`). No thumbnail outlives its record: one written for a record
 * removed meanwhile is removed again here, and the cleanup removes a removed
 * record's (functions/cleanup.ts).
 */
export class PreviewWorker {
  constructor(
    private readonly store: Pick<AttachmentStore, 'get' | 'settlePreview'>,
    private readonly files: Pick<FileStore, 'put' | 'remove'> & Pick<MultipartFileStore, 'firstBytes'>,
    private readonly maxBytes: number,
  ) {}

  async make(request: PreviewRequest, render: Renderer): Promise<PreviewOutcome> {
    const record = await this.store.get(request.attachment_id);
    if (!record || record.file_key !== request.file_key) {
      // An earlier delivery may have stored thumbnails before the record went.
      await this.removeThumbnails(request.file_key);
      return 'gone';
    }
    if (record.preview?.status !== 'pending') return 'not-pending';
    if (record.file_size > this.maxBytes) return this.settle(record, failed(`over the preview size limit of ${this.maxBytes} bytes`));
    const bytes = await this.files.firstBytes(record.file_key, record.file_size);
    if (!bytes) return this.settle(record, failed('the file is not there'));
    let rendered: RenderedPreview;
    try {
      rendered = await render(bytes);
    } catch (error) {
      if (error instanceof Undecodable) return this.settle(record, failed(error.message));
      throw error;
    }
    const thumbnails = await Promise.all(
      rendered.thumbnails.map(async ({ width, height, bytes: webp }, index) => {
        const key = thumbnailKey(record.file_key, index);
        await this.files.put(key, webp, 'image/webp');
        return { width, height, key };
      }),
    );
    const { width, height, placeholder } = rendered;
    return this.settle(record, { status: 'ready', width, height, placeholder, thumbnails });
  }

  /**
   * The last delivery of a request that kept failing on a backend: `failed`
   * rather than pending forever (its thumbnails, if any were stored, go).
   */
  async giveUp(request: PreviewRequest, cause: unknown): Promise<PreviewOutcome> {
    const record = await this.store.get(request.attachment_id);
    if (!record || record.file_key !== request.file_key) return 'gone';
    if (record.preview?.status !== 'pending') return 'not-pending';
    const outcome = await this.settle(record, failed(`gave up: ${cause instanceof Error ? cause.message : String(cause)}`));
    // Only once failed is recorded: a concurrent delivery that settled `ready` keeps its thumbnails.
    if (outcome === 'failed') await this.removeThumbnails(record.file_key);
    return outcome;
  }

  private async settle(record: AttachmentRecord, preview: SettledPreview): Promise<PreviewOutcome> {
    const outcome = await this.store.settlePreview(record, preview);
    if (outcome === 'gone') {
      await this.removeThumbnails(record.file_key);
      return 'gone';
    }
    if (outcome === 'settled') return 'not-pending';
    if (preview.status === 'failed') logger.info('preview failed', { attachment_id: record.id, reason: preview.reason });
    return preview.status;
  }

  private async removeThumbnails(fileKey: string): Promise<void> {
    await Promise.all(thumbnailKeys(fileKey).map((key) => this.files.remove(key)));
  }
}

const failed = (reason: string): SettledPreview => ({ status: 'failed', reason });
