import { GUARDDUTY_RESULTS, type GuardDutyResult } from './model.js';
import type { ScanResult } from './recorder.js';

/** What the stack's EventBridge rule matches: GuardDuty's scan results (docs: "Monitoring S3 object scans with Amazon EventBridge"). */
export const SCAN_RESULT_SOURCE = 'aws.guardduty';
export const SCAN_RESULT_DETAIL_TYPE = 'GuardDuty Malware Protection Object Scan Result';

/**
 * The result an EventBridge event carries, read from GuardDuty's documented
 * shape (`detail.s3ObjectDetails`, `detail.scanResultDetails`); undefined
 * for anything else (another event, a field missing or unknown), which the
 * recorder logs and drops rather than guess.
 */
export function scanResultOf(event: unknown): ScanResult | undefined {
  const envelope = event as {
    id?: unknown;
    source?: unknown;
    'detail-type'?: unknown;
    detail?: {
      s3ObjectDetails?: { bucketName?: unknown; objectKey?: unknown };
      scanResultDetails?: { scanResultStatus?: unknown };
    };
  } | null;
  if (envelope?.source !== SCAN_RESULT_SOURCE || envelope['detail-type'] !== SCAN_RESULT_DETAIL_TYPE) return undefined;
  const { id, detail } = envelope;
  const bucket = detail?.s3ObjectDetails?.bucketName;
  const objectKey = detail?.s3ObjectDetails?.objectKey;
  const result = detail?.scanResultDetails?.scanResultStatus;
  if (typeof id !== 'string' || typeof bucket !== 'string' || typeof objectKey !== 'string') return undefined;
  if (!GUARDDUTY_RESULTS.includes(result as GuardDutyResult)) return undefined;
  return { eventId: id, bucket, objectKey, result: result as GuardDutyResult };
}
