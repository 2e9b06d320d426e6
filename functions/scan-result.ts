import { type Composition, scanRecorder } from '../shared/app.js';
import { type AnyEventBridgeEvent, eventTarget } from '../shared/event-target.js';
import { logger } from '../shared/observability.js';
import { scanResultOf } from '../shared/scanning/result-event.js';

/**
 * The scan recorder (docs/api.md, "Scanning"): GuardDuty's "Malware
 * Protection Object Scan Result" events, routed by the stack's EventBridge
 * rule (locally, the scanner's stand-in invokes it the same way), each
 * recorded on the attachment whose file was scanned. A backend's failure
 * throws: Lambda invokes it again, then its dead-letter queue and alarm take
 * the event. Every step is safe to repeat.
 */
async function recordScan(event: AnyEventBridgeEvent, composition: Composition): Promise<void> {
  const result = scanResultOf(event);
  if (!result) {
    logger.error('not a scan result; dropped', { detail_type: event?.['detail-type'], source: event?.source });
    return;
  }
  const outcome = await composition.use(scanRecorder).record(result);
  logger.info('scan result recorded', { object_key: result.objectKey, result: result.result, outcome });
}

export const handler = eventTarget('ScanRecorder', recordScan);
