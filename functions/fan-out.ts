import type { DynamoDBStreamEvent } from 'aws-lambda';
import { fanOut, type App } from '../shared/app.js';
import { latestOfEachSender, type SharedUpload } from '../shared/conversations/fan-out.js';
import { fromItem } from '../shared/attachments/dynamo-store.js';
import { addedItem, isInsert, tableOf } from '../shared/cleanup/stream-events.js';
import { ATTACHMENT_SK } from '../shared/dynamo/keys.js';
import { logger } from '../shared/observability.js';
import { streamConsumer } from '../shared/stream-consumer.js';

/**
 * Moves every upload into a thread to the thread's other sides, from the
 * attachments table's stream (new records only; shared/conversations/fan-out.ts).
 * Every write is forward only, so records delivered again change nothing. A
 * failure throws: the event source mapping retries the batch (bisecting it),
 * then hands it to the dead-letter queue and its alarm; the local stream
 * poller retries until it succeeds.
 */
async function spread(event: DynamoDBStreamEvent, app: App): Promise<void> {
  for (const upload of latestOfEachSender(uploadsIn(event, app.config.attachmentsTable))) {
    const reached = await app.use(fanOut).deliver(upload);
    logger.info('upload reached its thread', { attachment_id: upload.attachmentId, sides: reached });
  }
}

/** The batch's new attachment records placed in a thread, as uploads. */
function uploadsIn(event: DynamoDBStreamEvent, attachmentsTable: string): SharedUpload[] {
  const uploads: SharedUpload[] = [];
  for (const record of event.Records) {
    if (!isInsert(record) || tableOf(record) !== attachmentsTable) continue;
    const item = addedItem(record);
    if (!item || item.sk !== ATTACHMENT_SK) continue;
    const attachment = fromItem(item);
    if (!attachment.placement) continue;
    uploads.push({
      attachmentId: attachment.id,
      uploadedBy: attachment.uploaded_by,
      counterpart: attachment.placement.counterpart,
      createdAt: attachment.created_at,
    });
  }
  return uploads;
}

export const handler = streamConsumer(spread);
