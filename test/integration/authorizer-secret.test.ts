import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayTokenAuthorizerEvent } from 'aws-lambda';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { signToken } from '../../shared/auth/tokens.js';

// The deployed authorizer gets AUTH_SECRET_ARN, not the secret: it reads the
// secret once per cold start from the Parameters and Secrets Lambda Extension's
// local HTTP API (here a stand-in on loopback that, like the extension, answers
// only callers presenting the function's session token).
const SECRET = 'deployed-signing-key';
const SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:AuthSecret-AbCdEf';
const SESSION_TOKEN = 'session-token-of-this-execution-environment';
const methodArn = 'arn:aws:execute-api:eu-west-1:123456789012:api1/prod/GET/v1/conversations';

type Answer = 'secret' | 'not ready' | 'no secret string';
interface Read {
  secretId: string | null;
  status: number;
}

let server: Server;
let reads: Read[] = [];
let nextAnswers: Answer[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    const url = new URL(request.url!, 'http://extension');
    const secretId = url.searchParams.get('secretId');
    const answer = (status: number, body: unknown) => {
      reads.push({ secretId, status });
      response.writeHead(status, { 'content-type': 'application/json' }).end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    if (request.method !== 'GET' || url.pathname !== '/secretsmanager/get') return answer(404, 'not found');
    if (request.headers['x-aws-parameters-secrets-token'] !== SESSION_TOKEN) return answer(401, 'Unauthorized');
    if (secretId !== SECRET_ARN) return answer(400, { __type: 'ResourceNotFoundException', message: 'no such secret' });
    const next = nextAnswers.shift() ?? 'secret';
    if (next === 'not ready') return answer(400, 'not ready to serve traffic, please wait');
    if (next === 'no secret string') return answer(200, { ARN: secretId, Name: 'AuthSecret', SecretBinary: 'AAEC' });
    answer(200, { ARN: secretId, Name: 'AuthSecret', SecretString: SECRET, VersionStages: ['AWSCURRENT'] });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  Object.assign(process.env, {
    AUTH_SECRET_ARN: SECRET_ARN,
    AUTH_SECRET: '',
    AUTH_JWKS_URL: '',
    PARAMETERS_SECRETS_EXTENSION_HTTP_PORT: String((server.address() as AddressInfo).port),
  });
});
// The files of an integration worker share its process (vitest.config.ts): the next file finds process.env as it was.
const environmentBefore = { ...process.env };
afterAll(async () => {
  for (const name of Object.keys(process.env)) if (!(name in environmentBefore)) delete process.env[name];
  Object.assign(process.env, environmentBefore);
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  reads = [];
  nextAnswers = [];
  process.env.AWS_SESSION_TOKEN = SESSION_TOKEN;
});

/** A fresh execution environment: the authorizer module loaded anew, nothing read yet. */
async function coldStart() {
  vi.resetModules();
  const { handler } = await import('../../functions/authorizer.js');
  return handler;
}

const event = async (userId: string, secret = SECRET): Promise<APIGatewayTokenAuthorizerEvent> => ({
  type: 'TOKEN',
  methodArn,
  authorizationToken: `Bearer ${await signToken(secret, userId)}`,
});

describe('the authorizer with its secret behind the Parameters and Secrets extension', () => {
  it('reads the secret once per cold start, then verifies every token with it', async () => {
    const handler = await coldStart();
    expect((await handler(await event('bob'))).principalId).toBe('bob');
    const denied = await handler(await event('mallory', 'some-other-key'));
    expect(denied.policyDocument.Statement[0]!.Effect).toBe('Deny');
    expect(denied.context).toMatchObject({ error_code: 'token_invalid' });
    expect(reads).toEqual([{ secretId: SECRET_ARN, status: 200 }]);

    const restarted = await coldStart();
    expect((await restarted(await event('bob'))).principalId).toBe('bob');
    expect(reads).toHaveLength(2);
  });

  it('retries a failed read (an answer without SecretString) on the next request instead of keeping the failure', async () => {
    const handler = await coldStart();
    nextAnswers = ['no secret string'];
    await expect(handler(await event('alice'))).rejects.toThrow(/no string value/);
    expect((await handler(await event('alice'))).policyDocument.Statement[0]!.Effect).toBe('Allow');
    expect(reads.map((read) => read.status)).toEqual([200, 200]);
  });

  it('presents the session token: with a wrong or missing one the extension refuses and no token is accepted', async () => {
    const handler = await coldStart();
    process.env.AWS_SESSION_TOKEN = 'a-token-from-another-environment';
    await expect(handler(await event('alice'))).rejects.toThrow(/answered 401/);
    delete process.env.AWS_SESSION_TOKEN;
    await expect(handler(await event('alice'))).rejects.toThrow(/answered 401/);
    process.env.AWS_SESSION_TOKEN = SESSION_TOKEN;
    expect((await handler(await event('alice'))).principalId).toBe('alice');
    expect(reads.map((read) => read.status)).toEqual([401, 401, 200]);
  });

  it('waits out an extension that is not ready yet within the same request', async () => {
    const handler = await coldStart();
    nextAnswers = ['not ready'];
    expect((await handler(await event('carol'))).principalId).toBe('carol');
    expect(reads.map((read) => read.status)).toEqual([400, 200]);
  });

  it('fails the request when the extension keeps answering not ready, and reads again on the next one', async () => {
    const handler = await coldStart();
    nextAnswers = ['not ready', 'not ready', 'not ready'];
    await expect(handler(await event('dave'))).rejects.toThrow(/answered 400/);
    expect((await handler(await event('dave'))).principalId).toBe('dave');
    expect(reads.map((read) => read.status)).toEqual([400, 400, 400, 200]);
  });
});
