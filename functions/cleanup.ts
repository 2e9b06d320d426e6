import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { attachmentLeftovers, type Composition, sessionLeftovers } from '../shared/app.js';
import { isRemoval, removedKey, removedString } from '../shared/cleanup/stream-events.js';
import { ATTACHMENT_SK, CONVERSATION_SK_PREFIX, SCAN_RESULT_SK_PREFIX, UPLOAD_INTENT_SK_PREFIX } from '../shared/dynamo/keys.js';
import { logger } from '../shared/observability.js';
import { eachInOrder, streamConsumer, type Unfinished } from '../shared/stream-consumer.js';
import { tableOf } from '../shared/stream-records.js';

/**
 * Removes what hangs off a removed item (AttachmentLeftovers, SessionLeftovers), idempotently, and
 * stops the batch at the first record that fails so the retry resumes there (docs/consistency.md,
 * "The building blocks").
 */
async function cleanUp(event: DynamoDBStreamEvent, composition: Composition): Promise<Unfinished | undefined> {
  const { conversationsTable, attachmentsTable, uploadSessionsTable } = composition.config;
  const leftovers = composition.use(attachmentLeftovers);
  return eachInOrder(event.Records, async (record) => {
    const key = removedKey(record);
    if (!isRemoval(record) || !key) return;
    const table = tableOf(record);
    if (table === conversationsTable && key.sk.startsWith(CONVERSATION_SK_PREFIX)) {
      const removed = await leftovers.removeAllOf(key.pk, key.sk);
      logger.info('conversation cleaned up', { conversation_id: key.sk, attachments_removed: removed });
    } else if (table === attachmentsTable && (key.sk === ATTACHMENT_SK || key.sk.startsWith(UPLOAD_INTENT_SK_PREFIX))) {
      const fileKey = removedString(record, 'file_key');
      if (!fileKey) {
        // Only a record from a stream without the item's image (not this stack's view type): nothing names the file.
        logger.error('attachment removed without its image; its file is not cleaned up', { attachment_id: key.pk });
      } else if (key.sk === ATTACHMENT_SK) {
        await leftovers.removeFile(fileKey);
      } else {
        await leftovers.removeUnheldFile(key.pk, fileKey);
      }
    } else if (table === attachmentsTable && key.sk.startsWith(SCAN_RESULT_SK_PREFIX)) {
      const fileKey = removedString(record, 'file_key');
      // An infected file's bytes go at once, unless a record holds the file settled otherwise (a late, contrary result).
      if (fileKey && removedString(record, 'result') === 'infected') await leftovers.removeInfectedFile(key.pk, fileKey);
    } else if (table === uploadSessionsTable) {
      await cleanUpSession(record, key, composition);
    }
  });
}

/** A removed upload session (TTL expiry, abort): its upload and object go unless it became an attachment. */
async function cleanUpSession(record: DynamoDBRecord, key: { pk: string; sk: string }, composition: Composition): Promise<void> {
  const attachmentId = removedString(record, 'attachment_id');
  const uploadId = removedString(record, 'upload_id');
  if (!attachmentId || !uploadId) {
    // Only a record from a stream without the item's image (not this stack's view type): nothing names the files.
    logger.error('upload session removed without its image; nothing to clean up', { upload_session_id: key.sk });
    return;
  }
  const outcome = await composition
    .use(sessionLeftovers)
    .removeUnlessAttached({ userId: key.pk, sessionId: key.sk, attachmentId, uploadId });
  logger.info('upload session cleaned up', { upload_session_id: key.sk, attachment_id: attachmentId, outcome });
}

export const handler = streamConsumer('Cleanup', cleanUp);
