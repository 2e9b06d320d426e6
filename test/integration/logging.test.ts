import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signToken } from '../../shared/auth/tokens.js';
import { apiCaller, type Json, sharedDynamodb } from '../support/api.js';
import { deadEndpoint } from '../support/dead-endpoint.js';
import { eventually } from '../support/eventually.js';

/**
 * The local server runs in a child process with logs and metrics on, as on
 * Lambda; the test reads everything it prints to stdout and stderr.
 */
interface LoggedServer {
  url: string;
  dynamodbEndpoint: string;
  conversationsTable: string;
  output(): string;
  stop(): Promise<void>;
}

const SECRET = `log-test-secret-${randomBytes(16).toString('hex')}`;
/** A file whose bytes would be recognisable in the output, raw or base64-encoded. */
const FILE_BYTES = Buffer.from(`file-bytes-${randomBytes(24).toString('hex')}`.repeat(20));

async function startLoggedServer(env: Record<string, string> = {}): Promise<LoggedServer> {
  // The suite's settings for its own output (metrics off, dev-mode pretty printing) are not the deployed ones.
  const { POWERTOOLS_METRICS_DISABLED: _disabled, POWERTOOLS_DEV: _dev, ...inherited } = process.env;
  const child: ChildProcess = fork(fileURLToPath(new URL('../support/log-server.ts', import.meta.url)), [], {
    execArgv: ['--import', 'tsx'],
    env: { ...inherited, AUTH_SECRET: SECRET, POWERTOOLS_LOG_LEVEL: 'INFO', DYNAMODB_ENDPOINT: '', ...sharedDynamodbEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  type Ready = { url: string; dynamodbEndpoint: string; conversationsTable: string };
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.once('message', (message) => resolve(message as Ready));
    child.once('exit', (code) => reject(new Error(`log server exited (${code}): ${output}`)));
  });
  return {
    ...ready,
    output: () => output,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.disconnect();
      }),
  };
}

/** The run's DynamoDB Local, for the child server (which cannot inject it itself). */
function sharedDynamodbEnv(): Record<string, string> {
  const { endpoint, tablePrefix } = sharedDynamodb();
  return { SHARED_DYNAMODB_ENDPOINT: endpoint, SHARED_TABLE_PREFIX: tablePrefix };
}

/** Lines of the output that are JSON objects (log lines and EMF records). */
const jsonLines = (output: string): Record<string, Json>[] =>
  output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line));

const USER = 'log_user';
let healthy: LoggedServer;
let broken: LoggedServer;
let token: string;
const requestIds: Record<string, string> = {};
let removedConversationId: string;
const cleanupLines = () =>
  jsonLines(healthy.output()).filter(
    (line) => line.message === 'conversation cleaned up' && line.conversation_id === removedConversationId,
  );

beforeAll(async () => {
  [healthy, broken] = await Promise.all([
    startLoggedServer(),
    deadEndpoint().then((dead) => startLoggedServer({ DYNAMODB_ENDPOINT: dead })),
  ]);
  token = await signToken(SECRET, USER);
  const call = apiCaller(healthy.url, async () => token);
  const created = await call(USER, 'POST', '/v1/conversations', { form: { contact_id: 'alice' }, headers: { 'idempotency-key': 'k1' } });
  requestIds.created = created.headers.get('x-request-id')!;
  const fetched = await call(USER, 'GET', `/v1/conversations/${created.body.id}`);
  requestIds.fetched = fetched.headers.get('x-request-id')!;
  requestIds.refused = (await call(USER, 'GET', '/v1/conversations?limit=0')).headers.get('x-request-id')!;
  const form = new FormData();
  form.append('conversation_id', created.body.id);
  form.append('file', new Blob([FILE_BYTES], { type: 'text/plain' }), 'notes.txt');
  const uploaded = await call(USER, 'POST', '/v1/attachments', { body: form, headers: { 'idempotency-key': 'upload-1' } });
  expect(uploaded.status).toBe(201);
  requestIds.uploaded = uploaded.headers.get('x-request-id')!;
  // A removed conversation: the cleanup, fed by the table's stream, logs what it removed.
  const removable = await call(USER, 'POST', '/v1/conversations', { form: { contact_id: 'bob' } });
  removedConversationId = removable.body.id;
  expect((await call(USER, 'DELETE', `/v1/conversations/${removedConversationId}`)).status).toBe(200);
  await eventually(
    async () => cleanupLines(),
    (lines) => lines.length > 0,
  );
  // A failure of ours (500): the conversations table disappears.
  await new DynamoDBClient({
    endpoint: healthy.dynamodbEndpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  }).send(new DeleteTableCommand({ TableName: healthy.conversationsTable }));
  const failed = await call(USER, 'GET', '/v1/conversations');
  expect(failed.status).toBe(500);
  requestIds.failed = failed.headers.get('x-request-id')!;
  // The backend cannot be reached (503).
  const unavailable = await apiCaller(broken.url, async () => token)(USER, 'GET', '/v1/conversations');
  expect(unavailable.status).toBe(503);
  requestIds.unavailable = unavailable.headers.get('x-request-id')!;
});
afterAll(() => Promise.all([healthy?.stop(), broken?.stop()]));

describe('logs', () => {
  it('never contain the bytes of an uploaded file, raw or base64', () => {
    const output = healthy.output();
    expect(output).toContain(requestIds.uploaded);
    expect(output).not.toContain(FILE_BYTES.toString('utf8').slice(0, 40));
    // In a base64 body the file starts at any of three alignments.
    for (const offset of [0, 1, 2]) expect(output).not.toContain(FILE_BYTES.subarray(offset).toString('base64').slice(4, 44));
  });

  it('never contain the token, its signing secret or the Authorization header', () => {
    const output = healthy.output() + broken.output();
    expect(output.length).toBeGreaterThan(0);
    expect(output).not.toContain(token);
    expect(output).not.toContain(token.split('.')[2]!);
    expect(output).not.toContain(SECRET);
    expect(output.toLowerCase()).not.toContain('bearer');
    expect(output.toLowerCase()).not.toContain('authorization');
  });

  it('have one JSON line per request with request id, route, method, status, latency and user id', () => {
    const lines = jsonLines(healthy.output()).filter((line) => line.message === 'request');
    const byId = (id: string) => lines.filter((line) => line.request_id === id);
    expect(byId(requestIds.created!)).toEqual([
      expect.objectContaining({
        level: 'INFO',
        service: 'messaging-api',
        route: '/v1/conversations',
        method: 'POST',
        status: 201,
        latency_ms: expect.any(Number),
        user_id: USER,
      }),
    ]);
    expect(byId(requestIds.fetched!)).toEqual([expect.objectContaining({ route: '/v1/conversations/{id}', method: 'GET', status: 200 })]);
    expect(byId(requestIds.refused!)).toEqual([expect.objectContaining({ status: 400 })]);
    expect(byId(requestIds.uploaded!)).toEqual([expect.objectContaining({ route: '/v1/attachments', method: 'POST', status: 201 })]);
    expect(byId(requestIds.failed!)).toEqual([expect.objectContaining({ status: 500 })]);
  });

  it('explain a 500 and a 503 in an ERROR line with the request id', () => {
    const errors = [...jsonLines(healthy.output()), ...jsonLines(broken.output())].filter((line) => line.level === 'ERROR');
    expect(errors.map((line) => line.request_id)).toEqual(expect.arrayContaining([requestIds.failed, requestIds.unavailable]));
    for (const line of errors)
      expect(line.error).toEqual(
        expect.objectContaining({ name: expect.any(String), message: expect.any(String), stack: expect.any(String) }),
      );
    expect(errors.find((line) => line.request_id === requestIds.failed)).toMatchObject({ function: 'ListConversations', user_id: USER });
  });

  it("tie every line of a request to its request id and function, and a stream consumer's to the record it handled", () => {
    const linesOf = (id: string) => jsonLines(healthy.output()).filter((line) => line.request_id === id);
    for (const id of Object.values(requestIds).filter((id) => id !== requestIds.unavailable))
      for (const line of linesOf(id)) expect(line).toMatchObject({ function: expect.any(String) });
    expect(linesOf(requestIds.created!).map((line) => line.function)).toContain('CreateConversation');
    expect(cleanupLines()).toEqual([
      expect.objectContaining({ function: 'Cleanup', event_id: expect.any(String), sequence_number: expect.any(String) }),
    ]);
  });
});

describe('metrics (CloudWatch EMF)', () => {
  const emf = () => jsonLines(healthy.output()).filter((line) => line._aws?.CloudWatchMetrics);

  it('count a cold start once per process', () => {
    const coldStarts = emf().filter((record) => record.ColdStart === 1);
    expect(coldStarts).toHaveLength(1);
    expect(coldStarts[0]!._aws.CloudWatchMetrics[0].Namespace).toBe('MessagingApi');
  });

  it('count requests per route, with their outcome and latency', () => {
    const requests = emf().filter((record) => record.Requests === 1);
    const routes = requests.map((record) => record.route);
    expect(routes.filter((route) => route === 'GET /v1/conversations')).toHaveLength(2);
    expect(routes.filter((route) => route === 'POST /v1/conversations')).toHaveLength(2);
    expect(routes.filter((route) => route === 'GET /v1/conversations/{id}')).toHaveLength(1);
    expect(routes.filter((route) => route === 'DELETE /v1/conversations/{id}')).toHaveLength(1);
    const metricNames = requests[0]!._aws.CloudWatchMetrics[0].Metrics.map((metric: { Name: string }) => metric.Name);
    expect(metricNames).toEqual(expect.arrayContaining(['Requests', 'Latency']));
    expect(requests[0]!._aws.CloudWatchMetrics[0].Dimensions).toEqual([['service', 'route']]);
    expect(requests.filter((record) => record.ServerErrors === 1).map((record) => record.route)).toEqual(['GET /v1/conversations']);
  });
});
