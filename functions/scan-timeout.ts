import type { SQSRecord } from 'aws-lambda';
import { type Composition, scanStore } from '../shared/app.js';
import { logger } from '../shared/observability.js';
import { queueConsumer } from '../shared/queue-consumer.js';
import { settleTimedOut } from '../shared/scanning/recorder.js';
import { scanTimerOf } from '../shared/scanning/timers.js';

/**
 * The scan timeout (docs/api.md, "Scanning"), fed by the scan timers' queue,
 * which the fan-out fills with each new record pending its scan, delayed
 * until its timeout is due: a file still pending is `unscannable`, one
 * attachment.updated as for a result. A backend's failure hands the message
 * back to the queue, then its dead-letter queue and alarm. A timer that comes
 * again, or after the result, changes nothing.
 */
async function expire(message: SQSRecord, composition: Composition): Promise<void> {
  const timer = scanTimerOf(message.body);
  if (!timer) {
    logger.error('not a scan timer; dropped', { body: message.body.slice(0, 200) });
    return;
  }
  const outcome = await settleTimedOut(composition.use(scanStore), timer.file_key);
  logger.info('scan timeout due', { file_key: timer.file_key, due_at: timer.due_at, outcome });
}

export const handler = queueConsumer('ScanTimeouts', expire);
