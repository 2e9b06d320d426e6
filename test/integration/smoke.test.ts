import { execFile } from 'node:child_process';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3 } from '../../infra/local/s3.js';
import { REPOSITORY_ROOT } from '../../infra/repository.js';
import { checks } from '../../infra/smoke/checks/index.js';
import { runSmoke, type SmokeReport } from '../../infra/smoke/run.js';
import { runMarker, throwawayUsers } from '../../infra/smoke/users.js';
import { readConfig } from '../../shared/config.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { storedFileKeys } from '../support/attachments.js';
import { eventually } from '../support/eventually.js';
import { cutEvery, isS3ObjectDelete } from '../support/fault-proxy.js';
import { startFaultyApi } from '../support/faulty-api.js';

// `npm run smoke` (infra/smoke/) against the local server: what proves a deployed stage must pass here,
// leave nothing behind, and fail (non-zero, the check named) when the stage is broken.
const ORIGIN = 'https://app.example';
const CLEANUP_ROW = 'delete all, wait for the cleanup to empty it';
const UPLOAD_ROW = 'upload 1 MiB, download via file_url';
const SESSION_ROW = checks.find((check) => check.name.startsWith('upload session'))!.name;

/** `npm run -s smoke -- <args>` as a user runs it: its exit code and what it printed. */
function npmSmoke(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('npm', ['run', '-s', 'smoke', '--', ...args], { cwd: REPOSITORY_ROOT, env: { ...process.env, ...env }, timeout: 180_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

const outcomes = (report: SmokeReport) => Object.fromEntries(report.results.map((result) => [result.name, result.outcome]));

/** The table's row of a check: its result and detail, as printed. */
const rowOf = (stdout: string, name: string) => stdout.split('\n').find((line) => line.startsWith(name)) ?? '';

/**
 * Nothing of the runs is left, read past the API: no file in the server's
 * bucket, no conversation or attachment record in its tables, no upload
 * session but completed ones (kept until their TTL: a completed session
 * cannot be deleted, its file is the attachment's); and the run's users
 * list nothing through the API.
 */
async function expectNothingLeft(t: TestApi, storedKeys: () => Promise<string[]>, userIds: string[]): Promise<void> {
  expect(await storedKeys()).toEqual([]);
  const scan = async (table: string) => (await t.api.app.dynamo.send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items ?? [];
  const { config } = t.api;
  expect(await scan(config.conversationsTable)).toEqual([]);
  expect(await scan(config.attachmentsTable)).toEqual([]);
  expect((await scan(config.uploadSessionsTable)).filter((session) => session.status !== 'completed')).toEqual([]);
  for (const userId of userIds) {
    for (const list of ['/v1/conversations', '/v1/attachments']) {
      const answer = await t.call(userId, 'GET', list);
      expect(answer.status).toBe(200);
      expect(answer.body.data).toEqual([]);
    }
  }
}

describe('the smoke against a working local server', () => {
  let t: TestApi;
  beforeAll(async () => {
    t = await startTestApi({ env: { CORS_ORIGINS: ORIGIN } });
  });
  afterAll(() => t?.close());

  it('passes every check, run as a function, and leaves nothing behind', async () => {
    const marker = runMarker();
    const users = await throwawayUsers(t.api.authSecret, marker);
    const report = await runSmoke({ base: t.url, marker, ...users, origin: ORIGIN });

    expect(report.results.filter((result) => result.outcome !== 'ok')).toEqual([]);
    expect(report.results.map((result) => result.name)).toEqual([...checks.map((check) => check.name), CLEANUP_ROW]);
    expect(report.passed).toBe(true);
    await expectNothingLeft(t, () => storedFileKeys(t.api.s3Endpoint), [users.user.label, users.other.label]);
  }, 120_000);

  it('passes through `npm run smoke` with a token minted from AUTH_SECRET: exit 0, every row ok', async () => {
    const run = await npmSmoke(['--url', `${t.url}/v1`, '--origin', ORIGIN], { AUTH_SECRET: t.api.authSecret });

    expect(run.code, run.stderr).toBe(0);
    for (const name of [...checks.map((check) => check.name), CLEANUP_ROW]) expect(rowOf(run.stdout, name)).toMatch(/\s+ok\s+\d+ ms/);
    expect(run.stdout).toContain('PASSED');
    const marker = /\(run (smoke-[^)]+)\)/.exec(run.stdout)![1]!;
    await expectNothingLeft(t, () => storedFileKeys(t.api.s3Endpoint), [`${marker}-a`, `${marker}-b`]);
  }, 180_000);

  it('fails the CORS check for an origin the stage was not deployed with', async () => {
    const marker = runMarker();
    const report = await runSmoke({ base: t.url, marker, ...(await throwawayUsers(t.api.authSecret, marker)), origin: 'https://elsewhere.example', checks: checks.filter((check) => check.name === 'CORS preflight') });

    expect(report.passed).toBe(false);
    expect(report.results[0]).toMatchObject({ name: 'CORS preflight', outcome: 'FAIL', detail: expect.stringContaining('https://elsewhere.example is not allowed') });
  });

  it('refuses a run it cannot authenticate: every check that needs the token fails, and the command says which', async () => {
    const run = await npmSmoke(['--url', t.url, '--token', 'not-a-token'], {});

    expect(run.code).toBe(1);
    expect(rowOf(run.stdout, 'create a conversation')).toMatch(/FAIL.*401 token_invalid/);
    expect(rowOf(run.stdout, UPLOAD_ROW)).toMatch(/skip.*no conversation/);
    expect(run.stdout).toContain('FAILED');
  }, 120_000);
});

describe('the smoke against a broken local server', () => {
  it('fails the file checks when S3 is down, names them, and still removes what it made', async () => {
    const f = await startFaultyApi();
    try {
      f.s3.down();
      const marker = runMarker();
      const users = await throwawayUsers(f.t.api.authSecret, marker);
      const report = await runSmoke({ base: f.t.url, marker, ...users });

      expect(report.passed).toBe(false);
      expect(outcomes(report)).toMatchObject({ 'create a conversation': 'ok', [UPLOAD_ROW]: 'FAIL', [SESSION_ROW]: 'FAIL', [CLEANUP_ROW]: 'ok' });
      expect(report.results.find((result) => result.name === UPLOAD_ROW)!.detail).toMatch(/^POST \/v1\/attachments: 503/);
      await expectNothingLeft(f.t, () => f.storedKeys(), [users.user.label, users.other.label]);
    } finally {
      await f.close();
    }
  }, 180_000);

  it('fails the cleanup, by its deadline, when the stage never removes a deleted attachment’s file', async () => {
    const f = await startFaultyApi();
    try {
      // The stream consumer's DeleteObject never reaches S3: what a missing permission or a stuck mapping looks like.
      const stuck = cutEvery(f.s3, isS3ObjectDelete);
      const marker = runMarker();
      const users = await throwawayUsers(f.t.api.authSecret, marker);
      const report = await runSmoke({
        base: f.t.url,
        marker,
        ...users,
        checks: checks.filter((check) => check.name === 'create a conversation' || check.name === UPLOAD_ROW),
        cleanup: { withinMs: 3_000, everyMs: 250 },
      });

      expect(report.passed).toBe(false);
      const cleanupRow = report.results.find((result) => result.name === CLEANUP_ROW)!;
      expect(cleanupRow.outcome).toBe('FAIL');
      expect(cleanupRow.detail).toMatch(/^after 3 s still there: the file of att_\w+ still downloads/);

      // Once S3 takes the deletion again, the stage's own retries finish what the smoke started.
      stuck.release();
      f.s3.calm();
      await eventually(() => f.storedKeys(), (keys) => keys.length === 0);
      await expectNothingLeft(f.t, () => f.storedKeys(), [users.user.label, users.other.label]);
    } finally {
      await f.close();
    }
  }, 180_000);

  it('fails through `npm run smoke` (exit 1) when file_url answers other bytes, names the check, and leaves nothing behind', async () => {
    const { filesBucket } = readConfig(process.env);
    const s3 = await startS3('127.0.0.1', filesBucket, { accessKeyId: 'local', secretAccessKey: 'local' });
    const corrupting = await corruptingProxy(s3.endpoint);
    const t = await startTestApi({ env: { S3_ENDPOINT: corrupting.endpoint } });
    try {
      const run = await npmSmoke(['--url', t.url], { AUTH_SECRET: t.api.authSecret });

      expect(run.code).toBe(1);
      expect(rowOf(run.stdout, UPLOAD_ROW)).toMatch(/FAIL.*file_url gave other bytes/);
      expect(rowOf(run.stdout, SESSION_ROW)).toMatch(/FAIL.*file_url gave other bytes/);
      expect(rowOf(run.stdout, CLEANUP_ROW)).toMatch(/\s+ok\s+/);
      expect(run.stdout).toContain('FAILED: 2 check(s)');
      const marker = /\(run (smoke-[^)]+)\)/.exec(run.stdout)![1]!;
      await expectNothingLeft(t, () => storedFileKeys(s3.endpoint), [`${marker}-a`, `${marker}-b`]);
    } finally {
      await t.close();
      await corrupting.close();
      await s3.close();
    }
  }, 180_000);
});

/**
 * An S3 in front of the real stand-in that changes one byte of every
 * presigned download (a GET signed in its query: file_url), and passes every
 * other call through: the stage stores the right bytes and serves wrong ones.
 */
async function corruptingProxy(upstream: string): Promise<{ endpoint: string; close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url!, upstream);
    const forward = httpRequest(url, { method: request.method, headers: request.headers }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.on('end', () => {
        const body = Buffer.concat(chunks);
        if (request.method === 'GET' && url.searchParams.has('X-Amz-Signature') && answer.statusCode === 200 && body.length > 0) body[body.length - 1]! ^= 0xff;
        response.writeHead(answer.statusCode!, answer.headers);
        response.end(body);
      });
    });
    forward.on('error', () => response.destroy());
    request.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
