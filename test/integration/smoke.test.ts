import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPOSITORY_ROOT } from '../../infra/declarations/repository.js';
import { startS3 } from '../../infra/local/s3.js';
import { checks } from '../../infra/smoke/checks/index.js';
import { settingsFrom, UsageError } from '../../infra/smoke/options.js';
import { runSmoke, type SmokeReport } from '../../infra/smoke/run.js';
import { givenUser, runMarker, throwawayUsers } from '../../infra/smoke/users.js';
import { dynamo } from '../../shared/app.js';
import { signToken } from '../../shared/auth/tokens.js';
import { readConfig } from '../../shared/config.js';
import { SCAN_RESULT_SK_PREFIX } from '../../shared/dynamo/keys.js';
import { sharedDynamodb, startTestApi, type TestApi } from '../support/api.js';
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
const SHARING_ROW = 'share a file with the second user';

const SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:AuthSecret-AbCdEf';

/** What `cdk deploy --outputs-file` writes, for a stack with these outputs. */
const outputsDirectory = mkdtempSync(join(tmpdir(), 'smoke-outputs-'));
afterAll(() => rmSync(outputsDirectory, { recursive: true, force: true }));

function outputsFile(outputs: Record<string, string>): string {
  const file = join(outputsDirectory, `${randomUUID()}.json`);
  writeFileSync(file, JSON.stringify({ MessagingApi: { ...outputs, FilesBucketName: 'messagingapi-files' } }));
  return file;
}

/**
 * Secrets Manager's GetSecretValue (JSON 1.1 protocol) on loopback, for the
 * smoke's own client reached through AWS_ENDPOINT_URL_SECRETS_MANAGER: the
 * secrets it holds, AccessDeniedException for any other, and what it was asked.
 */
async function fakeSecretsManager(secrets: Record<string, string>) {
  const requests: { target: string; secretId: string; credentialScope: string }[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const { SecretId } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { SecretId: string };
      const credentialScope = /Credential=([^,]+)/.exec(request.headers.authorization ?? '')?.[1] ?? '';
      requests.push({ target: String(request.headers['x-amz-target']), secretId: SecretId, credentialScope });
      const secret = secrets[SecretId];
      response.writeHead(secret === undefined ? 400 : 200, { 'content-type': 'application/x-amz-json-1.1' });
      response.end(
        JSON.stringify(
          secret === undefined
            ? { __type: 'AccessDeniedException', message: `not authorized to perform: secretsmanager:GetSecretValue on ${SecretId}` }
            : { ARN: SecretId, Name: 'AuthSecret', SecretString: secret },
        ),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    requests,
    /** The caller's environment: credentials of its own, this endpoint, no key of the stage at hand. */
    env: {
      AWS_ENDPOINT_URL_SECRETS_MANAGER: endpoint,
      AWS_ACCESS_KEY_ID: 'smoke-test',
      AWS_SECRET_ACCESS_KEY: 'smoke-test-secret',
      AWS_SESSION_TOKEN: '',
      AWS_PROFILE: '',
      AUTH_SECRET: '',
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** `npm run -s smoke -- <args>` as a user runs it: its exit code and what it printed. */
function npmSmoke(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'npm',
      ['run', '-s', 'smoke', '--', ...args],
      { cwd: REPOSITORY_ROOT, env: { ...process.env, ...env }, timeout: 180_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
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
 * cannot be deleted, its file is the attachment's), no scan result but one
 * that came after its file was deleted (kept until its TTL: the recorder
 * cannot tell a record deleted from one not written yet); and the run's
 * users list nothing through the API.
 */
async function expectNothingLeft(t: TestApi, storedKeys: () => Promise<string[]>, userIds: string[]): Promise<void> {
  expect(await storedKeys()).toEqual([]);
  const scan = async (table: string) =>
    (await t.api.composition.use(dynamo).send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items ?? [];
  const { config } = t.api;
  expect(await scan(config.conversationsTable)).toEqual([]);
  const scanItem = (item: Record<string, unknown>) => String(item.sk).startsWith(SCAN_RESULT_SK_PREFIX);
  expect((await scan(config.attachmentsTable)).filter((item) => !scanItem(item))).toEqual([]);
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
  });

  it('shares a file between users given by their tokens, using and keeping the side the second already held, removing what the run made', async () => {
    const [alice, bob] = [`alice-${randomUUID()}`, `bob-${randomUUID()}`];
    const held = await t.call(bob, 'POST', '/v1/conversations', { form: { contact_id: alice } });
    expect(held.status).toBe(201);
    const report = await runSmoke({
      base: t.url,
      marker: runMarker(),
      user: givenUser(await t.token(alice)),
      other: givenUser(await t.token(bob)),
      checks: checks.filter((check) => check.name === SHARING_ROW),
    });

    expect(report.results.filter((result) => result.outcome !== 'ok')).toEqual([]);
    expect(report.results.find((result) => result.name === SHARING_ROW)!.detail).toContain(`${bob}'s side ${held.body.id}`);
    // Bob's own conversation stays (now unread: the run's upload reached it); alice's side, which the run made, is gone.
    const kept = await t.call(bob, 'GET', `/v1/conversations/${held.body.id}`);
    expect(kept.status).toBe(200);
    expect(kept.body.last_active_at).toEqual(expect.any(Number));
    for (const [userId, list] of [
      [alice, '/v1/conversations'],
      [alice, '/v1/attachments'],
      [bob, '/v1/attachments'],
    ] as const) {
      const answer = await t.call(userId, 'GET', list);
      expect(answer.status).toBe(200);
      expect(answer.body.data).toEqual([]);
    }
    expect((await t.call(bob, 'GET', '/v1/conversations')).body.data.map((conversation: { id: string }) => conversation.id)).toEqual([
      held.body.id,
    ]);
    // Bob's own, deleted by bob: the other tests find this server's tables empty.
    expect((await t.call(bob, 'DELETE', `/v1/conversations/${held.body.id}`)).status).toBe(200);
  });

  it('passes through `npm run smoke -- --outputs cdk-outputs.json`, minting from the secret it reads with the caller’s credentials', async () => {
    const secrets = await fakeSecretsManager({ [SECRET_ARN]: t.api.authSecret });
    try {
      const outputs = outputsFile({ ApiUrl: `${t.url}/v1`, AuthSecretArn: SECRET_ARN });
      const run = await npmSmoke(['--outputs', outputs, '--origin', ORIGIN], secrets.env);

      expect(run.code, run.stderr).toBe(0);
      for (const name of [...checks.map((check) => check.name), CLEANUP_ROW]) expect(rowOf(run.stdout, name)).toMatch(/\s+ok\s+\d+ ms/);
      expect(run.stdout).toContain('PASSED');
      // One signed GetSecretValue of the stack's secret, in the secret's region, with the caller's credentials.
      expect(secrets.requests).toEqual([
        {
          target: 'secretsmanager.GetSecretValue',
          secretId: SECRET_ARN,
          credentialScope: expect.stringMatching(/^smoke-test\/\d{8}\/us-east-1\/secretsmanager\/aws4_request$/),
        },
      ]);
      const marker = /\(run (smoke-[^)]+)\)/.exec(run.stdout)![1]!;
      await expectNothingLeft(t, () => storedFileKeys(t.api.s3Endpoint), [`${marker}-a`, `${marker}-b`]);
    } finally {
      await secrets.close();
    }
  }, 180_000);

  it('stops before any check (exit 2) when the caller may not read the stack’s secret, saying what to do', async () => {
    const secrets = await fakeSecretsManager({});
    try {
      const run = await npmSmoke(['--outputs', outputsFile({ ApiUrl: `${t.url}/v1`, AuthSecretArn: SECRET_ARN })], secrets.env);

      expect(run.code).toBe(2);
      expect(run.stderr).toContain("Cannot read the stack's token secret (AccessDeniedException)");
      expect(run.stderr).toContain('--token');
      expect(run.stdout).not.toContain('check');
    } finally {
      await secrets.close();
    }
  });

  it('fails both CORS checks for an origin the stage was not deployed with', async () => {
    const marker = runMarker();
    const wanted = ['create a conversation', UPLOAD_ROW, 'CORS preflight', 'CORS of file_url (bucket)'];
    const report = await runSmoke({
      base: t.url,
      marker,
      ...(await throwawayUsers(t.api.authSecret, marker)),
      origin: 'https://elsewhere.example',
      checks: checks.filter((check) => wanted.includes(check.name)),
    });

    expect(report.passed).toBe(false);
    expect(outcomes(report)).toEqual({
      ...Object.fromEntries(wanted.map((name) => [name, 'ok'])),
      'CORS preflight': 'FAIL',
      'CORS of file_url (bucket)': 'FAIL',
      [CLEANUP_ROW]: 'ok',
    });
    const detail = (name: string) => report.results.find((result) => result.name === name)!.detail;
    expect(detail('CORS preflight')).toContain('https://elsewhere.example is not allowed');
    expect(detail('CORS of file_url (bucket)')).toContain('the bucket does not allow https://elsewhere.example');
  });

  it('refuses a run it cannot authenticate: every check that needs the token fails, and the command says which', async () => {
    const run = await npmSmoke(['--url', t.url, '--token', 'not-a-token'], {});

    expect(run.code).toBe(1);
    expect(rowOf(run.stdout, 'create a conversation')).toMatch(/FAIL.*401 token_invalid/);
    expect(rowOf(run.stdout, UPLOAD_ROW)).toMatch(/skip.*no conversation/);
    expect(run.stdout).toContain('FAILED');
  });
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
      expect(outcomes(report)).toMatchObject({
        'create a conversation': 'ok',
        [UPLOAD_ROW]: 'FAIL',
        [SESSION_ROW]: 'FAIL',
        [CLEANUP_ROW]: 'ok',
      });
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
      await eventually(
        () => f.storedKeys(),
        (keys) => keys.length === 0,
      );
      await expectNothingLeft(f.t, () => f.storedKeys(), [users.user.label, users.other.label]);
    } finally {
      await f.close();
    }
  }, 180_000);

  it('fails the sharing check, and the cleanup names the side it waits for, when no fan-out runs; a consumer started later finishes it', async () => {
    const tables = sharedDynamodb();
    const off = await startTestApi({ sharedDynamodb: tables, env: { LOCAL_STREAM_CONSUMERS: 'off' } });
    try {
      const marker = runMarker();
      const users = await throwawayUsers(off.api.authSecret, marker);
      const [uploader, contact] = [users.user.label, users.other.label];
      const report = await runSmoke({
        base: off.url,
        marker,
        ...users,
        checks: checks.filter((check) => check.name === SHARING_ROW),
        fanOutWithinMs: 2_000,
        cleanup: { withinMs: 3_000, everyMs: 250 },
      });

      expect(outcomes(report)).toEqual({ [SHARING_ROW]: 'FAIL', [CLEANUP_ROW]: 'FAIL' });
      const detail = (name: string) => report.results.find((result) => result.name === name)!.detail;
      expect(detail(SHARING_ROW)).toBe(
        `${contact} holds no unread conversation with ${uploader} 2 s after the upload: the fan-out did not reach them`,
      );
      expect(detail(CLEANUP_ROW)).toContain(`${contact}'s conversation with ${uploader}, which the stage owes them, has not appeared yet`);

      // The stream waited: a server with consumers on the same tables and files makes the side (and removes the deleted file).
      const on = await startTestApi({ sharedDynamodb: tables, env: { S3_ENDPOINT: off.api.s3Endpoint } });
      try {
        const sides = await eventually(
          async (): Promise<{ id: string }[]> => (await on.call(contact, 'GET', `/v1/conversations?contact_id=${uploader}`)).body.data,
          (data) => data.length === 1,
        );
        expect(sides).toHaveLength(1);
        expect((await on.call(contact, 'DELETE', `/v1/conversations/${sides[0]!.id}`)).status).toBe(200);
        await eventually(
          () => storedFileKeys(off.api.s3Endpoint),
          (keys) => keys.length === 0,
        );
        await expectNothingLeft(on, () => storedFileKeys(off.api.s3Endpoint), [uploader, contact]);
      } finally {
        await on.close();
      }
    } finally {
      await off.close();
    }
  }, 180_000);

  it('fails through `npm run smoke` (exit 1) when file_url answers other bytes, names the check, and leaves nothing behind', async () => {
    const { filesBucket } = readConfig(process.env);
    // The server's scanner stand-in hears of this S3's objects as of its own.
    let scanned: TestApi | undefined;
    const s3 = await startS3(
      '127.0.0.1',
      filesBucket,
      { accessKeyId: 'local', secretAccessKey: 'local' },
      undefined,
      0,
      [],
      undefined,
      (key) => scanned?.api.scanner?.objectCreated(key),
    );
    const corrupting = await corruptingProxy(s3.endpoint);
    const t = await startTestApi({ env: { S3_ENDPOINT: corrupting.endpoint } });
    scanned = t;
    try {
      const run = await npmSmoke(['--url', t.url], { AUTH_SECRET: t.api.authSecret });

      expect(run.code).toBe(1);
      expect(rowOf(run.stdout, UPLOAD_ROW)).toMatch(/FAIL.*file_url gave other bytes/);
      expect(rowOf(run.stdout, SESSION_ROW)).toMatch(/FAIL.*file_url gave other bytes/);
      expect(rowOf(run.stdout, SHARING_ROW)).toMatch(/FAIL.*-b's file_url: file_url gave other bytes/);
      expect(rowOf(run.stdout, CLEANUP_ROW)).toMatch(/\s+ok\s+/);
      expect(run.stdout).toContain('FAILED: 3 check(s)');
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
        if (request.method === 'GET' && url.searchParams.has('X-Amz-Signature') && answer.statusCode === 200 && body.length > 0)
          body[body.length - 1]! ^= 0xff;
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

describe('the command line', () => {
  it('takes the stage from --url in any of the forms a user pastes, and tokens as given, named by their subject', async () => {
    const [a, b] = [await signToken('k', 'alice'), await signToken('k', 'bob')];
    for (const url of [
      'https://abc.execute-api.eu-west-1.amazonaws.com/prod/v1',
      'https://abc.execute-api.eu-west-1.amazonaws.com/prod/',
      'https://abc.execute-api.eu-west-1.amazonaws.com/prod',
    ]) {
      const settings = await settingsFrom(['--url', url, '--token', a, '--token-b', b], {});
      expect(settings).toMatchObject({
        base: 'https://abc.execute-api.eu-west-1.amazonaws.com/prod',
        user: { label: 'alice', id: 'alice', token: a },
        other: { label: 'bob', id: 'bob', token: b },
      });
    }
    expect((await settingsFrom(['--url', 'http://127.0.0.1:3000/v1', '--token', a], {})).other).toBeUndefined();
  });

  it('mints two throwaway users per run from AUTH_SECRET, and refuses what it cannot run', async () => {
    const [first, second] = await Promise.all(
      [1, 2].map(() => settingsFrom(['--url', 'https://abc.example/prod/v1'], { AUTH_SECRET: 'k' })),
    );
    expect(first!.user.label).toMatch(/^smoke-[0-9a-z]+-[0-9a-f]{8}-a$/);
    expect(first!.other!.label).toBe(first!.user.label.replace(/-a$/, '-b'));
    expect(second!.user.label).not.toBe(first!.user.label);

    await expect(settingsFrom(['--url', 'https://abc.example/prod/v1'], {})).rejects.toThrow(UsageError);
    await expect(settingsFrom(['--url', 'https://abc.example/prod/v1', '--token-b', 'x'], {})).rejects.toThrow('--token-b needs --token');
    await expect(settingsFrom([], { AUTH_SECRET: 'k' })).rejects.toThrow('--url');
    await expect(settingsFrom(['--url', 'ftp://abc.example'], { AUTH_SECRET: 'k' })).rejects.toThrow('http(s)');
  });
});
