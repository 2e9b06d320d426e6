import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../shared/time.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { putPart, type SessionClient, sessionClient } from '../support/upload-sessions.js';

/**
 * Expiry without waiting: the local API's clock (its `clock` option, the
 * Composition's Clock) is the test's, moved forward; the SDKs keep the real time.
 */
let t: TestApi;
let sessions: SessionClient;
/** Where the test has put "now"; undefined: the system clock. */
let movedTo: number | undefined;

beforeAll(async () => {
  t = await startTestApi({ clock: () => movedTo ?? systemClock() });
  sessions = sessionClient(t);
});
afterEach(() => {
  movedTo = undefined;
});
afterAll(async () => {
  await t?.close();
});

const clockAt = (unixSeconds: number) => {
  movedTo = unixSeconds;
};

describe('an upload session past expires_at', () => {
  it('shows status expired and refuses parts and completion with 400 upload_session_expired', async () => {
    const session = (await sessions.start('expiring', { filename: 'a.bin', file_size: 100 })).body;
    const url = (await sessions.sign('expiring', session.id, [1])).body.data[0].url;
    const etag = await putPart(url, randomBytes(100));

    clockAt(session.expires_at);
    const shown = await t.call('expiring', 'GET', `/v1/upload_sessions/${session.id}`);
    expect(shown.body).toMatchObject({ status: 'expired', parts: [] });
    const signed = await t.call('expiring', 'POST', `/v1/upload_sessions/${session.id}/parts`, { json: { part_numbers: [1] } });
    expect(signed.status).toBe(400);
    expect(signed.body.error.code).toBe('upload_session_expired');
    const completed = await t.call('expiring', 'POST', `/v1/upload_sessions/${session.id}/complete`, {
      json: { parts: [{ part_number: 1, etag }] },
    });
    expect(completed.status).toBe(400);
    expect(completed.body.error.code).toBe('upload_session_expired');
    expect((await t.call('expiring', 'GET', '/v1/attachments')).body.data).toEqual([]);
  });

  it('never presigns a part URL that outlives the session', async () => {
    const session = (await sessions.start('expiring', { filename: 'a.bin', file_size: 100 })).body;
    clockAt(session.expires_at - 60);
    const signed = await t.call('expiring', 'POST', `/v1/upload_sessions/${session.id}/parts`, { json: { part_numbers: [1] } });
    expect(signed.status).toBe(200);
    expect(signed.body.data[0].expires_at).toBe(session.expires_at);
    expect(new URL(signed.body.data[0].url).searchParams.get('X-Amz-Expires')).toBe('60');
  });

  it('can still be aborted, and then its parts are gone', async () => {
    const session = (await sessions.start('expiring', { filename: 'a.bin', file_size: 100 })).body;
    clockAt(session.expires_at + 3600);
    const aborted = await t.call('expiring', 'DELETE', `/v1/upload_sessions/${session.id}`);
    expect(aborted.status).toBe(200);
    expect((await t.call('expiring', 'GET', `/v1/upload_sessions/${session.id}`)).status).toBe(404);
  });
});
