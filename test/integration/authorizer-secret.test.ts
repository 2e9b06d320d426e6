import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayTokenAuthorizerEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signToken } from '../../shared/auth/tokens.js';

// The deployed authorizer gets AUTH_SECRET_ARN, not the secret: it reads the
// secret from Secrets Manager (here a stand-in on loopback) once per cold start.
const SECRET = 'deployed-signing-key';
const SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:AuthSecret-AbCdEf';
const methodArn = 'arn:aws:execute-api:eu-west-1:123456789012:api1/prod/GET/v1/conversations';

let server: Server;
const reads: { secretId: string }[] = [];
let failNextRead = false;
let handler: (event: APIGatewayTokenAuthorizerEvent) => Promise<any>;

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      const { SecretId } = JSON.parse(body);
      reads.push({ secretId: SecretId });
      response.setHeader('content-type', 'application/x-amz-json-1.1');
      if (failNextRead) {
        failNextRead = false;
        response.statusCode = 400;
        return response.end(JSON.stringify({ __type: 'ResourceNotFoundException', message: 'not yet' }));
      }
      response.end(JSON.stringify({ ARN: SecretId, Name: 'AuthSecret', SecretString: SECRET }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  Object.assign(process.env, {
    AUTH_SECRET_ARN: SECRET_ARN,
    AUTH_SECRET: '',
    AUTH_JWKS_URL: '',
    AWS_REGION: 'eu-west-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_ENDPOINT_URL_SECRETS_MANAGER: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
  });
  ({ handler } = await import('../../functions/authorizer.js'));
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const event = async (userId: string, secret = SECRET): Promise<APIGatewayTokenAuthorizerEvent> => ({
  type: 'TOKEN',
  methodArn,
  authorizationToken: `Bearer ${await signToken(secret, userId)}`,
});

describe('the authorizer with its secret in Secrets Manager', () => {
  it('retries a failed secret read on the next request instead of keeping the failure', async () => {
    failNextRead = true;
    await expect(handler(await event('alice'))).rejects.toThrow();
    expect((await handler(await event('alice'))).policyDocument.Statement[0].Effect).toBe('Allow');
    expect(reads).toHaveLength(2);
  });

  it('reads the secret once, then verifies every token with it', async () => {
    const before = reads.length;
    expect((await handler(await event('bob'))).principalId).toBe('bob');
    const denied = await handler(await event('mallory', 'some-other-key'));
    expect(denied.policyDocument.Statement[0].Effect).toBe('Deny');
    expect(denied.context).toMatchObject({ error_code: 'token_invalid' });
    expect(reads.length).toBe(before);
    expect(reads.every((read) => read.secretId === SECRET_ARN)).toBe(true);
  });
});
