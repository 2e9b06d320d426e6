import { createServer, type Server } from 'node:http';
import type { APIGatewayAuthorizerResult } from 'aws-lambda';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler } from '../../../functions/authorizer.js';
import { decodeGroups, MAX_GROUPS } from '../../../shared/auth/groups.js';
import { readConfig } from '../../../shared/config.js';

const METHOD_ARN = 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/POST/v1/conversations';
const authorize = (env: Record<string, string>, token: string) =>
  handler.withConfig(readConfig(env))({ type: 'TOKEN', authorizationToken: `Bearer ${token}`, methodArn: METHOD_ARN });

const effectOf = (result: APIGatewayAuthorizerResult) => (result.policyDocument.Statement[0] as { Effect: string }).Effect;

/** What the functions will read (shared/http/request.ts), from an Allow; the denial's code otherwise. */
function outcome(result: APIGatewayAuthorizerResult) {
  if (effectOf(result) === 'Allow') return { allowed: decodeGroups(result.context?.groups) };
  return { denied: result.context?.error_code, message: result.context?.error_message };
}

/** Claims that must never pass, whatever the mode. */
const MALFORMED: [string, unknown][] = [
  ['a string', 'team'],
  ['null', null],
  ['an object', { team: true }],
  ['a number in it', ['team', 7]],
  ['an empty id', ['']],
  ['an id with a space', ['my team']],
  ['an id of 129 characters', ['g'.repeat(129)]],
  ['a nested array', [['team']]],
  [`${MAX_GROUPS + 1} ids`, Array.from({ length: MAX_GROUPS + 1 }, (_, i) => `g${i}`)],
];

describe('the authorizer with HS256 tokens', () => {
  const secret = 'unit-test-secret';
  const sign = (claims: Record<string, unknown>) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('member')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(secret));

  it('hands the groups of the default claim to the functions, and none when the claim is absent', async () => {
    expect(outcome(await authorize({ AUTH_SECRET: secret }, await sign({ groups: ['team', 'family', 'team'] })))).toEqual({
      allowed: new Set(['team', 'family']),
    });
    expect(outcome(await authorize({ AUTH_SECRET: secret }, await sign({})))).toEqual({ allowed: new Set() });
  });

  it('reads the claim GROUPS_CLAIM names, and only that one', async () => {
    const env = { AUTH_SECRET: secret, GROUPS_CLAIM: 'cognito:groups' };
    expect(outcome(await authorize(env, await sign({ 'cognito:groups': ['admins'], groups: ['ignored'] })))).toEqual({
      allowed: new Set(['admins']),
    });
    expect(outcome(await authorize(env, await sign({ groups: ['ignored'] })))).toEqual({ allowed: new Set() });
  });

  it('takes no inherited property for a claim named after one', async () => {
    expect(outcome(await authorize({ AUTH_SECRET: secret, GROUPS_CLAIM: 'constructor' }, await sign({})))).toEqual({ allowed: new Set() });
  });

  it.each(MALFORMED)('denies a token whose groups claim is %s: token_invalid', async (_, claim) => {
    const result = await authorize({ AUTH_SECRET: secret }, await sign({ groups: claim }));
    expect(outcome(result)).toEqual({ denied: 'token_invalid', message: expect.stringMatching(/^Token groups must /) });
    expect(result.context).not.toHaveProperty('groups');
  });
});

describe('the authorizer with tokens from a JWKS URL (Cognito style)', () => {
  let server: Server;
  let jwksUrl: string;
  let privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

  beforeAll(async () => {
    const pair = await generateKeyPair('RS256', { extractable: true });
    privateKey = pair.privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    server = createServer((_, response) => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    jwksUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/jwks.json`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  // As Cognito puts it in ID and access tokens: `cognito:groups`, a JSON array of the user pool's group names.
  const cognitoToken = (claims: Record<string, unknown>) =>
    new SignJWT({ token_use: 'access', ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setSubject('cognito-user')
      .setExpirationTime('1h')
      .sign(privateKey);

  it('hands cognito:groups to the functions when GROUPS_CLAIM names it', async () => {
    const env = { AUTH_JWKS_URL: jwksUrl, GROUPS_CLAIM: 'cognito:groups' };
    const result = await authorize(env, await cognitoToken({ 'cognito:groups': ['editors', 'readers'] }));
    expect(result.principalId).toBe('cognito-user');
    expect(outcome(result)).toEqual({ allowed: new Set(['editors', 'readers']) });
    expect(outcome(await authorize(env, await cognitoToken({})))).toEqual({ allowed: new Set() });
  });

  it.each(MALFORMED)('denies a token whose cognito:groups is %s: token_invalid', async (_, claim) => {
    const result = await authorize(
      { AUTH_JWKS_URL: jwksUrl, GROUPS_CLAIM: 'cognito:groups' },
      await cognitoToken({ 'cognito:groups': claim }),
    );
    expect(outcome(result)).toEqual({ denied: 'token_invalid', message: expect.stringMatching(/^Token groups must /) });
  });
});
