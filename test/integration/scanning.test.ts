import { randomBytes } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as scanRecorder } from '../../functions/scan-result.js';
import { LOCAL_ACCOUNT } from '../../infra/local/gateway.js';
import { actingAs, SCAN_RECORDER_FUNCTION } from '../../infra/local/iam.js';
import { EICAR, resultEvent } from '../../infra/local/scanner.js';
import { dynamo } from '../../shared/app.js';
import { uploadSessionKey } from '../../shared/dynamo/keys.js';
import { FILES_PREFIX, fileKey, PREVIEWS_PREFIX } from '../../shared/files/keys.js';
import type { GuardDutyResult } from '../../shared/scanning/model.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { download, fileKeyOf, storedFileKeys } from '../support/attachments.js';
import { eventually } from '../support/eventually.js';
import { png } from '../support/images.js';
import { type Attachment, freshId, type Member, sharingCalls, type Thread } from '../support/sharing.js';
import { sessionClient } from '../support/upload-sessions.js';

/**
 * Scanning (docs/api.md, "Scanning"), over HTTP against the local server:
 * the upload answers `pending`, the scanner's stand-in (infra/local/scanner.ts)
 * answers GuardDuty's result event to the scan recorder (functions/scan-result.ts),
 * and every reader sees the file only as the result allows.
 */

interface Scanned extends Attachment {
  file_url: string;
  file_url_expires_at: number | null;
  scan_status: string;
  preview: { status: string; width: number | null; thumbnails: unknown[] } | null;
}

/** Two members of a direct thread, each with their side. */
async function pair(s: ReturnType<typeof sharingCalls>) {
  const alice: Member = { id: freshId('alice') };
  const bob: Member = { id: freshId('bob') };
  const side = (await s.openSide(alice, { contact_id: bob.id } satisfies Thread)).body.id;
  await s.openSide(bob, { contact_id: alice.id });
  return { alice, bob, side };
}

/** GuardDuty's result for the file, handed to the recorder as EventBridge would (the same event id when redelivered). */
async function deliverTo(api: TestApi, key: string, result: GuardDutyResult, id = randomBytes(8).toString('hex')) {
  // As its own function, signing with its own role, as the stand-in and AWS invoke it.
  const recorder = actingAs(SCAN_RECORDER_FUNCTION, scanRecorder.withComposition(api.api.composition));
  const { region } = api.api.config;
  const event = resultEvent({ region, account: LOCAL_ACCOUNT, bucket: api.api.config.filesBucket, planArn: 'plan' }, key, result);
  await recorder({ ...event, id });
}

/** The attachment as `who` reads it once its scan is `status` (the sharing calls' own wait). */
const scanned = async (s: ReturnType<typeof sharingCalls>, who: Member, id: string, status: string) =>
  (await s.scanned(who, id, status)) as Scanned;

describe('with the scanner stand-in answering after its delay', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi({ scanDelayMs: 300 });
  });
  afterAll(() => api?.close());
  const s = sharingCalls(() => api);

  it('a clean file reaches another member once clean, each reader told once by attachment.updated (previous_attributes.scan_status)', async () => {
    const { alice, bob, side } = await pair(s);
    const bytes = randomBytes(64);
    const uploaded = (await s.upload(alice, side, { bytes })) as Scanned;
    expect(uploaded.scan_status).toBe('pending');
    expect(uploaded.file_url).toEqual(expect.any(String));

    const seen = await scanned(s, bob, uploaded.id, 'clean');
    const fetched = await download(seen.file_url);
    expect(fetched.status).toBe(200);
    expect(fetched.bytes.equals(bytes)).toBe(true);

    for (const who of [alice, bob]) {
      const events = await s.feedOf(who, (feed) => feed.some((event) => event.type === 'attachment.updated'));
      const ofFile = events.filter((event) => event.data.object.id === uploaded.id);
      expect(ofFile.map((event) => event.type)).toEqual(['attachment.created', 'attachment.updated']);
      expect(ofFile[0]!.data.object.scan_status).toBe('pending');
      expect(ofFile[1]!.data.object.scan_status).toBe('clean');
      expect(ofFile[1]!.data.previous_attributes).toMatchObject({ scan_status: 'pending' });
      expect(ofFile[1]!.request_id).toBeNull();
    }
  });

  it('the EICAR file is infected: its bytes are deleted, no one gets a link, the uploader included, and the record stays until its uploader deletes it', async () => {
    const { alice, bob, side } = await pair(s);
    const uploaded = (await s.upload(alice, side, { bytes: Buffer.from(EICAR), filename: 'eicar.com' })) as Scanned;
    const key = fileKeyOf(uploaded);

    for (const who of [alice, bob]) {
      const seen = await scanned(s, who, uploaded.id, 'infected');
      expect([seen.file_url, seen.file_url_expires_at, seen.preview]).toEqual([null, null, null]);
    }
    await eventually(
      () => storedFileKeys(api.api.s3Endpoint, api.api.config.filesBucket),
      (keys) => !keys.includes(key),
    );
    expect((await download(uploaded.file_url)).status).not.toBe(200);
    expect((await s.call(alice, 'DELETE', `/v1/attachments/${uploaded.id}`)).status).toBe(200);
  });

  it('an infected image is never previewed: its thumbnails go with its bytes and its preview is null for everyone', async () => {
    const { alice, bob, side } = await pair(s);
    const bytes = Buffer.concat([await png(400, 300), Buffer.from(EICAR)]);
    const uploaded = (await s.upload(alice, side, { bytes, filename: 'photo.png', type: 'image/png' })) as Scanned;
    expect(uploaded.preview?.status).toBe('pending');
    const key = fileKeyOf(uploaded);
    for (const who of [alice, bob]) expect((await scanned(s, who, uploaded.id, 'infected')).preview).toBeNull();
    const thumbnailsOf = `${PREVIEWS_PREFIX}${key.slice(FILES_PREFIX.length)}/`;
    // The worker's settling either came first (the cleanup removes what it stored) or finds the file infected (it removes its own).
    await eventually(
      async () => {
        const infected = (await s.attachment(alice, uploaded.id)).body;
        const stored = await storedFileKeys(api.api.s3Endpoint, api.api.config.filesBucket, PREVIEWS_PREFIX);
        return { infected, stored: stored.filter((stored) => stored.startsWith(thumbnailsOf)) };
      },
      ({ infected, stored }) => infected.preview === null && stored.length === 0 && api.api.previews.depth === 0,
      30_000,
    );
  });
});

describe("in a large group's thread (LARGE_GROUP_SIDES=2)", () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi({ scanDelayMs: 300, env: { LARGE_GROUP_SIDES: '2' } });
  });
  afterAll(() => api?.close());
  const s = sharingCalls(() => api);

  it('holds a file from the other member until clean, and the thread feed tells its scan result once', async () => {
    const g = freshId('g');
    const [alice, bob]: Member[] = [
      { id: freshId('alice'), groups: [g] },
      { id: freshId('bob'), groups: [g] },
    ];
    const [aliceSide, bobSide] = [(await s.openSide(alice!, { group_id: g })).body.id, (await s.openSide(bob!, { group_id: g })).body.id];
    await s.upload(alice!, aliceSide);
    // The switch follows the first upload's delivery: done once a member's GET /v1/realtime lists the group's channel.
    await eventually(
      () => s.call(bob!, 'GET', '/v1/realtime'),
      (response) => response.status === 200 && response.body.group_channels.some((listed: { group_id: string }) => listed.group_id === g),
    );

    const uploaded = (await s.upload(alice!, aliceSide, { bytes: randomBytes(64) })) as Scanned;
    const held = (await s.attachment(bob!, uploaded.id)).body as Scanned;
    if (held.scan_status === 'pending') expect(held.file_url).toBeNull();
    const seen = await scanned(s, bob!, uploaded.id, 'clean');
    expect((await download(seen.file_url)).status).toBe(200);

    const ofFile = async () => {
      const response = await s.call(bob!, 'GET', `/v1/events?conversation_id=${bobSide}&limit=100`);
      expect(response.status, response.text).toBe(200);
      return (response.body.data as { type: string; data: { object: Scanned; previous_attributes?: object } }[])
        .filter((event) => event.data.object.id === uploaded.id)
        .reverse();
    };
    const events = await eventually(ofFile, (found) => found.length >= 2);
    expect(events.map((event) => event.type)).toEqual(['attachment.created', 'attachment.updated']);
    expect(events[1]!.data.object.scan_status).toBe('clean');
    expect(events[1]!.data.previous_attributes).toMatchObject({ scan_status: 'pending' });
  });
});

describe('with the scanner stand-in not answering within the test', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi({ scanDelayMs: 3_600_000 });
  });
  afterAll(() => api?.close());
  const s = sharingCalls(() => api);

  const deliver = (key: string, result: GuardDutyResult, id?: string) => deliverTo(api, key, result, id);

  it('holds a pending file from other members (no link, the preview status alone) while its uploader keeps both', async () => {
    const { alice, bob, side } = await pair(s);
    const uploaded = (await s.upload(alice, side, { bytes: await png(400, 300), filename: 'photo.png', type: 'image/png' })) as Scanned;
    const own = await eventually(
      () => s.attachment(alice, uploaded.id),
      (response) => response.body.preview?.status === 'ready',
      30_000,
    );
    expect(own.body.file_url).toEqual(expect.any(String));
    expect(own.body.preview.thumbnails).toHaveLength(2);
    const held = (await s.attachment(bob, uploaded.id)).body as Scanned;
    expect(held.scan_status).toBe('pending');
    expect([held.file_url, held.file_url_expires_at]).toEqual([null, null]);
    expect(held.preview).toEqual({ status: 'ready', width: null, height: null, placeholder: null, thumbnails: [] });
    const listed = await s.list(bob, `conversation_id=${(await s.sides(bob, { contact_id: alice.id }))[0]!.id}`);
    expect(listed.data.find((item) => item.id === uploaded.id)?.file_url).toBeNull();
  });

  it('asks again once after a failed scan, then records unscannable (held by default) once, whatever is delivered again', async () => {
    const { alice, bob, side } = await pair(s);
    const uploaded = (await s.upload(alice, side)) as Scanned;
    const key = fileKeyOf(uploaded);
    await deliver(key, 'FAILED', 'first-failure');
    await deliver(key, 'FAILED', 'first-failure');
    expect((await s.attachment(alice, uploaded.id)).body.scan_status).toBe('pending');
    await deliver(key, 'ACCESS_DENIED', 'second-failure');
    await deliver(key, 'ACCESS_DENIED', 'second-failure');
    await deliver(key, 'NO_THREATS_FOUND');
    const mine = (await s.attachment(alice, uploaded.id)).body as Scanned;
    expect(mine.scan_status).toBe('unscannable');
    expect(mine.file_url).toEqual(expect.any(String));
    const theirs = await scanned(s, bob, uploaded.id, 'unscannable');
    expect(theirs.file_url).toBeNull();
    const events = await s.feedOf(bob, (feed) => feed.some((event) => event.data.object.scan_status === 'unscannable'));
    expect(events.filter((event) => event.type === 'attachment.updated' && event.data.object.id === uploaded.id)).toHaveLength(1);
  });

  it("keeps a result that comes before its record (an upload session's object exists first) and applies it when the record comes", async () => {
    const { alice, bob, side } = await pair(s);
    const sessions = sessionClient(api);
    const bytes = randomBytes(1024);
    const started = await sessions.start(alice.id, { filename: 'early.bin', file_size: bytes.length, conversation_id: side });
    expect(started.status, started.text).toBe(201);
    const parts = await sessions.uploadAll(alice.id, started.body, bytes);
    const { Item } = await api.api.composition
      .use(dynamo)
      .send(new GetCommand({ TableName: api.api.config.uploadSessionsTable, Key: uploadSessionKey(alice.id, started.body.id) }));
    await deliver(fileKey(alice.id, Item!.attachment_id, started.body.id), 'NO_THREATS_FOUND');
    const completed = await sessions.complete(alice.id, started.body.id, parts);
    expect(completed.status, completed.text).toBe(201);
    const seen = await scanned(s, bob, completed.body.id, 'clean');
    expect((await download(seen.file_url)).bytes.equals(bytes)).toBe(true);
  });

  it('a result for a deleted attachment changes nothing', async () => {
    const { alice, side } = await pair(s);
    const uploaded = (await s.upload(alice, side)) as Scanned;
    expect((await s.call(alice, 'DELETE', `/v1/attachments/${uploaded.id}`)).status).toBe(200);
    const before = await s.feed(alice);
    await deliver(fileKeyOf(uploaded), 'THREATS_FOUND');
    expect((await s.attachment(alice, uploaded.id)).status).toBe(404);
    expect(await s.feed(alice)).toEqual(before);
  });
});

describe('with no scan result within the timeout (SCAN_TIMEOUT_SECONDS=1)', () => {
  let api: TestApi;
  beforeAll(async () => {
    // The scanner never answers within the test; the file's timer comes back from the local queue a second after the upload.
    api = await startTestApi({ scanDelayMs: 3_600_000, env: { SCAN_TIMEOUT_SECONDS: '1' } });
  });
  afterAll(() => api?.close());
  const s = sharingCalls(() => api);

  it('records the file unscannable when its timer comes (held from other members), each reader told once: nothing stays pending', async () => {
    const { alice, bob, side } = await pair(s);
    const uploaded = (await s.upload(alice, side)) as Scanned;
    expect(uploaded.scan_status).toBe('pending');
    const theirs = await scanned(s, bob, uploaded.id, 'unscannable');
    expect(theirs.file_url).toBeNull();
    expect((await scanned(s, alice, uploaded.id, 'unscannable')).file_url).toEqual(expect.any(String));
    for (const who of [alice, bob]) {
      const events = await s.feedOf(who, (feed) => feed.some((event) => event.data.object.scan_status === 'unscannable'));
      const updates = events.filter((event) => event.type === 'attachment.updated' && event.data.object.id === uploaded.id);
      expect(updates.map((event) => event.data.previous_attributes)).toEqual([{ scan_status: 'pending' }]);
    }
  });

  it("records an upload session's file unscannable when its timer comes, as a POST's", async () => {
    const { alice, bob, side } = await pair(s);
    const sessions = sessionClient(api);
    const bytes = randomBytes(1024);
    const started = await sessions.start(alice.id, { filename: 'late.bin', file_size: bytes.length, conversation_id: side });
    expect(started.status, started.text).toBe(201);
    const completed = await sessions.complete(alice.id, started.body.id, await sessions.uploadAll(alice.id, started.body, bytes));
    expect(completed.status, completed.text).toBe(201);
    expect(completed.body.scan_status).toBe('pending');
    expect((await scanned(s, bob, completed.body.id, 'unscannable')).file_url).toBeNull();
  });

  const deliver = (key: string, result: GuardDutyResult, id?: string) => deliverTo(api, key, result, id);

  /** The scan changes a reader's feed holds for the file: each attachment.updated's previous scan_status and new one. */
  const scanChanges = async (who: Member, id: string, until: string) => {
    const events = await s.feedOf(who, (feed) =>
      feed.some((event) => event.data.object.id === id && event.data.object.scan_status === until),
    );
    return events
      .filter(
        (event) =>
          event.type === 'attachment.updated' && event.data.object.id === id && event.data.previous_attributes?.scan_status !== undefined,
      )
      .map((event) => [event.data.previous_attributes?.scan_status, event.data.object.scan_status]);
  };

  it("a late THREATS_FOUND replaces the timeout's unscannable: bytes and thumbnails deleted, no link for anyone, each reader told once, whatever is delivered again", async () => {
    const { alice, bob, side } = await pair(s);
    const bytes = Buffer.concat([await png(400, 300), Buffer.from(EICAR)]);
    const uploaded = (await s.upload(alice, side, { bytes, filename: 'photo.png', type: 'image/png' })) as Scanned;
    const key = fileKeyOf(uploaded);
    const thumbnailsOf = `${PREVIEWS_PREFIX}${key.slice(FILES_PREFIX.length)}/`;
    const stored = async () => {
      const { s3Endpoint, config } = api.api;
      const keys = [
        ...(await storedFileKeys(s3Endpoint, config.filesBucket)),
        ...(await storedFileKeys(s3Endpoint, config.filesBucket, PREVIEWS_PREFIX)),
      ];
      return keys.filter((stored) => stored === key || stored.startsWith(thumbnailsOf));
    };
    // Timed out, and its thumbnails made (the uploader's view), before the result comes.
    await scanned(s, bob, uploaded.id, 'unscannable');
    await eventually(
      () => s.attachment(alice, uploaded.id),
      (response) => response.body.preview?.status === 'ready',
      30_000,
    );
    expect(await stored()).toHaveLength(3);

    await deliver(key, 'THREATS_FOUND', 'late-threat');
    await deliver(key, 'THREATS_FOUND', 'late-threat');
    await deliver(key, 'NO_THREATS_FOUND');
    for (const who of [alice, bob]) {
      const seen = await scanned(s, who, uploaded.id, 'infected');
      expect([seen.file_url, seen.file_url_expires_at, seen.preview]).toEqual([null, null, null]);
      expect(await scanChanges(who, uploaded.id, 'infected')).toEqual([
        ['pending', 'unscannable'],
        ['unscannable', 'infected'],
      ]);
    }
    await eventually(stored, (keys) => keys.length === 0);
    expect((await download(uploaded.file_url)).status).not.toBe(200);
  });

  it("a late NO_THREATS_FOUND replaces the timeout's unscannable: the other member downloads the file; no later result moves it out of clean", async () => {
    const { alice, bob, side } = await pair(s);
    const bytes = randomBytes(64);
    const uploaded = (await s.upload(alice, side, { bytes })) as Scanned;
    expect((await scanned(s, bob, uploaded.id, 'unscannable')).file_url).toBeNull();

    await deliver(fileKeyOf(uploaded), 'NO_THREATS_FOUND', 'late-clean');
    await deliver(fileKeyOf(uploaded), 'NO_THREATS_FOUND', 'late-clean');
    await deliver(fileKeyOf(uploaded), 'THREATS_FOUND');
    await deliver(fileKeyOf(uploaded), 'UNSUPPORTED');
    const theirs = await scanned(s, bob, uploaded.id, 'clean');
    const fetched = await download(theirs.file_url);
    expect(fetched.status).toBe(200);
    expect(fetched.bytes.equals(bytes)).toBe(true);
    // The uploader's events are written with each settling: every delivery above has had its say.
    expect(await scanChanges(alice, uploaded.id, 'clean')).toEqual([
      ['pending', 'unscannable'],
      ['unscannable', 'clean'],
    ]);
    expect((await s.attachment(alice, uploaded.id)).body.scan_status).toBe('clean');
    expect(await scanChanges(bob, uploaded.id, 'clean')).toEqual([
      ['pending', 'unscannable'],
      ['unscannable', 'clean'],
    ]);
  });

  it("a result's own unscannable (UNSUPPORTED) is final: a later result does not replace it", async () => {
    const { alice, side } = await pair(s);
    const uploaded = (await s.upload(alice, side)) as Scanned;
    const key = fileKeyOf(uploaded);
    await deliver(key, 'UNSUPPORTED');
    expect((await s.attachment(alice, uploaded.id)).body.scan_status).toBe('unscannable');
    await deliver(key, 'NO_THREATS_FOUND');
    expect((await s.attachment(alice, uploaded.id)).body.scan_status).toBe('unscannable');
    expect(await scanChanges(alice, uploaded.id, 'unscannable')).toEqual([['pending', 'unscannable']]);
  });
});

describe('with scanning off', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi({ env: { SCANNING: 'off' } });
  });
  afterAll(() => api?.close());
  const s = sharingCalls(() => api);

  it('every file is not_scanned and served to other members at once, with no scanner running', async () => {
    const { alice, bob, side } = await pair(s);
    const bytes = Buffer.from(EICAR);
    const uploaded = (await s.upload(alice, side, { bytes })) as Scanned;
    expect(uploaded.scan_status).toBe('not_scanned');
    const theirs = (await s.attachment(bob, uploaded.id)).body as Scanned;
    expect(theirs.scan_status).toBe('not_scanned');
    expect((await download(theirs.file_url)).bytes.equals(bytes)).toBe(true);
    expect(api.api.scanner).toBeUndefined();
  });
});
