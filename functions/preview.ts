import type { SQSRecord } from 'aws-lambda';
import { type Composition, previewWorker } from '../shared/app.js';
import { inFallback } from '../shared/deadline.js';
import { logger } from '../shared/observability.js';
import { PREVIEW_DELIVERIES } from '../shared/previews/delivery.js';
import { renderPreview } from '../shared/previews/render.js';
import type { PreviewRequest } from '../shared/previews/service.js';
import { deliveryOf, queueConsumer } from '../shared/queue-consumer.js';

/**
 * The preview worker (docs/api.md, "Previews"), fed by the previews queue,
 * which the fan-out fills with each new record whose preview is pending: the
 * file decoded by its bytes, its thumbnails stored, the record settled once.
 * A file that does not decode is the file's failure (`failed`); a backend's
 * failure hands the message back to the queue, and its last delivery settles
 * the preview `failed` rather than leave it pending, before the dead-letter
 * queue and its alarm take what even that could not record.
 */
async function makePreview(message: SQSRecord, composition: Composition): Promise<void> {
  const request = previewRequestOf(message.body);
  if (!request) {
    logger.error('not a preview request; dropped', { body: message.body.slice(0, 200) });
    return;
  }
  const worker = composition.use(previewWorker);
  try {
    const outcome = await worker.make(request, renderPreview);
    logger.info('preview made', { attachment_id: request.attachment_id, outcome });
  } catch (error) {
    if (deliveryOf(message) < PREVIEW_DELIVERIES) throw error;
    // In the reserve the main path leaves: a stall that spent the budget is what most often brings the last delivery here.
    const outcome = await inFallback(() => worker.giveUp(request, error));
    logger.warn('preview given up after its last delivery', { attachment_id: request.attachment_id, outcome, error });
  }
}

function previewRequestOf(body: string): PreviewRequest | undefined {
  try {
    const { attachment_id, file_key } = JSON.parse(body) as Partial<PreviewRequest>;
    return typeof attachment_id === 'string' && typeof file_key === 'string' ? { attachment_id, file_key } : undefined;
  } catch {
    return undefined;
  }
}

export const handler = queueConsumer('Previews', makePreview);
