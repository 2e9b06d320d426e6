/**
 * Malware scanning of attachments (docs/api.md, "Scanning"): what a record's
 * `scan_status` may be, how GuardDuty's results map to it, and who may
 * download a file in each state.
 */

export type ScanStatus = 'pending' | 'clean' | 'infected' | 'unscannable' | 'not_scanned';

/** A state a scan result settles a pending file in. */
export type SettledScan = Extract<ScanStatus, 'clean' | 'infected' | 'unscannable'>;

/** GuardDuty Malware Protection for S3's five results (scanResultDetails.scanResultStatus). */
export const GUARDDUTY_RESULTS = ['NO_THREATS_FOUND', 'THREATS_FOUND', 'UNSUPPORTED', 'ACCESS_DENIED', 'FAILED'] as const;
export type GuardDutyResult = (typeof GUARDDUTY_RESULTS)[number];

/** What a result means for the file: settled, or asked again once (ACCESS_DENIED and FAILED), then unscannable. */
export function settlementOf(result: GuardDutyResult): SettledScan | 'ask-again' {
  switch (result) {
    case 'NO_THREATS_FOUND':
      return 'clean';
    case 'THREATS_FOUND':
      return 'infected';
    case 'UNSUPPORTED':
      return 'unscannable';
    default:
      return 'ask-again';
  }
}

/** The deployment's scanning settings (shared/config.ts). */
export interface ScanSettings {
  /** Off: every upload is `not_scanned` and served at once (regions without GuardDuty's malware protection for S3). */
  enabled: boolean;
  /** Whether an `unscannable` file reaches other readers (SCAN_UNSCANNABLE=serve); held by default. */
  serveUnscannable: boolean;
  /** A file with no result this long after its upload is `unscannable` (SCAN_TIMEOUT_SECONDS, 15 minutes by default). */
  timeoutSeconds: number;
}

/** A new upload's status under these settings. */
export const initialScan = (settings: Pick<ScanSettings, 'enabled'>): ScanStatus => (settings.enabled ? 'pending' : 'not_scanned');

/**
 * What one reader may have of a file: `full` (its link and thumbnails),
 * `held` (no link, the preview's status alone), `none` (an infected file:
 * no link and no preview, for everyone).
 */
export type FileAccess = 'full' | 'held' | 'none';

export function fileAccess(status: ScanStatus, isUploader: boolean, settings: Pick<ScanSettings, 'serveUnscannable'>): FileAccess {
  if (status === 'infected') return 'none';
  if (isUploader || status === 'clean' || status === 'not_scanned') return 'full';
  return status === 'unscannable' && settings.serveUnscannable ? 'full' : 'held';
}
