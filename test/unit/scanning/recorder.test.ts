import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fileKey } from '../../../shared/files/keys.js';
import { fileAccess, GUARDDUTY_RESULTS, type GuardDutyResult, type SettledScan } from '../../../shared/scanning/model.js';
import {
  type ScannedFile,
  ScanRecorder,
  type ScanStore,
  type SettledBy,
  type Settlement,
  settleKeptOrTime,
  settleTimedOut,
} from '../../../shared/scanning/recorder.js';
import { scanResultOf } from '../../../shared/scanning/result-event.js';

/**
 * AWS's sample "Malware Protection Object Scan Result" event (GuardDuty User
 * Guide, "Monitoring S3 object scans with Amazon EventBridge"), written down
 * as fixtures/scan-result-threats-found.json; each test puts an attachment's
 * file key in place of the sample's object key.
 */
const sample = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', 'scan-result-threats-found.json'), 'utf8'));
const KEY = fileKey('user_1', 'att_01HZY3M2V7X9Z1B3D5F7H9K1MN', 'run1');

function sampleWith(result: GuardDutyResult, id = sample.id, objectKey = KEY) {
  return {
    ...sample,
    id,
    detail: {
      ...sample.detail,
      s3ObjectDetails: { ...sample.detail.s3ObjectDetails, objectKey },
      scanResultDetails: { scanResultStatus: result, threats: result === 'THREATS_FOUND' ? sample.detail.scanResultDetails.threats : null },
    },
  };
}

/** A record pending its scan (present or not yet), its kept results and failures, in memory. */
class MemoryScans implements ScanStore {
  record: { status: string; by?: SettledBy } | undefined = { status: 'pending' };
  keptResult: SettledScan | undefined;
  failures: string[] = [];
  settled: SettledScan[] = [];

  async keep(_file: ScannedFile, status: SettledScan) {
    this.keptResult = status;
  }
  async kept() {
    return this.keptResult;
  }
  async firstFailure(_file: ScannedFile, eventId: string) {
    if (this.failures.length === 0 || this.failures[0] === eventId) {
      this.failures[0] = eventId;
      return true;
    }
    return false;
  }
  async settle(_file: ScannedFile, status: SettledScan, by: SettledBy): Promise<Settlement> {
    if (!this.record) return 'no-record';
    if (by === 'result') this.keptResult = undefined;
    if (this.record.status !== 'pending') return 'not-pending';
    this.record = { status, by };
    this.settled.push(status);
    return 'settled';
  }
}

function recorder() {
  const store = new MemoryScans();
  const askedAgain: string[] = [];
  const recording = new ScanRecorder(store, { askAgain: async (_bucket, key) => void askedAgain.push(key) });
  const record = (result: GuardDutyResult, id?: string) => recording.record(scanResultOf(sampleWith(result, id))!);
  return { store, askedAgain, record };
}

describe("GuardDuty's result event", () => {
  it("is read from AWS's sample: its id, bucket, object key and result", () => {
    expect(scanResultOf(sample)).toEqual({
      eventId: '72c7d362-737a-6dce-fc78-9e27a0171419',
      bucket: 'amzn-s3-demo-bucket',
      objectKey: 'APKAEIBAERJR2EXAMPLE',
      result: 'THREATS_FOUND',
    });
  });

  it('refuses another source, another detail type, an unknown result or a missing key, rather than guess', () => {
    expect(scanResultOf({ ...sample, source: 'aws.s3' })).toBeUndefined();
    expect(scanResultOf({ ...sample, 'detail-type': 'GuardDuty Malware Protection Post Scan Action Failed' })).toBeUndefined();
    expect(scanResultOf(sampleWith('CLEAN' as GuardDutyResult))).toBeUndefined();
    expect(scanResultOf({ ...sample, detail: { ...sample.detail, s3ObjectDetails: {} } })).toBeUndefined();
    expect(scanResultOf(null)).toBeUndefined();
  });
});

describe('the scan recorder', () => {
  it.each([
    ['NO_THREATS_FOUND', 'clean'],
    ['THREATS_FOUND', 'infected'],
    ['UNSUPPORTED', 'unscannable'],
  ] as const)('records %s as %s once, whatever is delivered again', async (result, status) => {
    const { store, record } = recorder();
    expect(await record(result)).toBe('settled');
    expect(await record(result)).toBe('not-pending');
    expect(store.settled).toEqual([status]);
  });

  it.each(['ACCESS_DENIED', 'FAILED'] as const)(
    'asks again once after %s (also when that event comes again), then records unscannable',
    async (result) => {
      const { store, askedAgain, record } = recorder();
      expect(await record(result, 'first')).toBe('asked-again');
      expect(await record(result, 'first')).toBe('asked-again');
      expect(store.settled).toEqual([]);
      expect(await record(result, 'second')).toBe('settled');
      expect(store.settled).toEqual(['unscannable']);
      expect(askedAgain).toEqual([KEY, KEY]);
    },
  );

  it('keeps a result that comes before its record, which settles the record when it comes', async () => {
    const { store, record } = recorder();
    store.record = undefined;
    expect(await record('NO_THREATS_FOUND')).toBe('no-record');
    expect(store.keptResult).toBe('clean');
    store.record = { status: 'pending' };
    const pending = { file_key: KEY, created_at: 1_000 } as Parameters<typeof settleKeptOrTime>[1];
    expect(await settleKeptOrTime(store, pending, 900)).toBe('settled');
    expect(store.settled).toEqual(['clean']);
  });

  it("gives a new record with no result yet a timer due at its upload's time plus the timeout, which settles it unscannable once", async () => {
    const { store } = recorder();
    const pending = { file_key: KEY, created_at: 1_000 } as Parameters<typeof settleKeptOrTime>[1];
    expect(await settleKeptOrTime(store, pending, 900)).toEqual({ file_key: KEY, due_at: 1_900 });
    expect(await settleTimedOut(store, KEY)).toBe('settled');
    expect(await settleTimedOut(store, KEY)).toBe('not-pending');
    expect(store.settled).toEqual(['unscannable']);
    expect(store.record).toEqual({ status: 'unscannable', by: 'timeout' });
  });

  it('settles a file by the result kept for it when its timer comes (the recording failed after keeping it)', async () => {
    const { store } = recorder();
    store.keptResult = 'infected';
    expect(await settleTimedOut(store, KEY)).toBe('settled');
    expect(store.record).toEqual({ status: 'infected', by: 'result' });
  });

  it('leaves alone an object that is not an attachment file (the plan scans the files prefix only)', async () => {
    const { store } = recorder();
    const recording = new ScanRecorder(store, { askAgain: async () => undefined });
    expect(await recording.record(scanResultOf(sampleWith('THREATS_FOUND', 'x', 'previews/a/b/0.webp'))!)).toBe('not-a-file');
    expect(store.settled).toEqual([]);
  });

  it('maps every one of the five results', async () => {
    for (const result of GUARDDUTY_RESULTS) expect(await recorder().record(result)).toMatch(/^(settled|asked-again)$/);
  });
});

describe('who may download a file', () => {
  it('its uploader unless infected; another reader once clean or not scanned, and unscannable as the deployment says', () => {
    const serve = { serveUnscannable: true };
    const hold = { serveUnscannable: false };
    expect(fileAccess('pending', true, hold)).toBe('full');
    expect(fileAccess('pending', false, serve)).toBe('held');
    expect(fileAccess('clean', false, hold)).toBe('full');
    expect(fileAccess('not_scanned', false, hold)).toBe('full');
    expect(fileAccess('unscannable', false, hold)).toBe('held');
    expect(fileAccess('unscannable', false, serve)).toBe('full');
    expect(fileAccess('infected', true, serve)).toBe('none');
    expect(fileAccess('infected', false, serve)).toBe('none');
  });
});
