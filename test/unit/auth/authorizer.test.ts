import { createServer, type Server } from 'node:http';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowPolicy, wholeApiArn } from '../../../shared/auth/policy.js';
import { TokenRejected, type TokenVerifier, tokenVerifier } from '../../../shared/auth/tokens.js';
import { MAX_USER_ID_BYTES } from '../../../shared/dynamo/keys.js';

describe('the authorizer policy', () => {
  it('allows the whole API of the stage, not only the method it was asked about', () => {
    const arn = 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/GET/v1/conversations/conv_1';
    expect(wholeApiArn(arn)).toBe('arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*/*');
    expect(allowPolicy({ userId: 'user-1', groups: new Set(['team']) }, arn)).toMatchObject({
      principalId: 'user-1',
      context: { userId: 'user-1', groups: '["team"]' },
    });
  });
});

describe('token subjects', () => {
  const secret = 'unit-test-secret';
  const verifier = tokenVerifier({ mode: 'secret', secret, groupsClaim: 'groups' });
  const withSub = (sub: string) =>
    new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject(sub).setExpirationTime('5m').sign(new TextEncoder().encode(secret));
  const rejection = (sub: string) =>
    withSub(sub)
      .then((token) => verifier.verify(token))
      .then(
        () => undefined,
        (error: unknown) => error,
      );

  it(`accepts a subject of exactly ${MAX_USER_ID_BYTES} UTF-8 bytes, astral characters included`, async () => {
    const sub = '\u{1F600}'.repeat(MAX_USER_ID_BYTES / 4);
    expect(await verifier.verify(await withSub(sub))).toEqual({ userId: sub, groups: new Set() });
  });

  it.each([
    ['one byte over the bound', 'x'.repeat(MAX_USER_ID_BYTES + 1)],
    ['a lone high surrogate', 'user\ud800'],
    ['a lone low surrogate', '\udc00user'],
  ])('refuses a subject with %s as token_invalid', async (_, sub) => {
    const error = await rejection(sub);
    expect(error).toBeInstanceOf(TokenRejected);
    expect(error).toMatchObject({ code: 'token_invalid', message: expect.stringContaining('subject') });
  });
});

describe('tokens from a JWKS URL', () => {
  let server: Server;
  let verifier: TokenVerifier;
  let privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
  let publicPem: string;
  const issuer = 'https://issuer.example';
  const audience = 'messaging-api';

  beforeAll(async () => {
    const pair = await generateKeyPair('RS256', { extractable: true });
    privateKey = pair.privateKey;
    publicPem = await exportSPKI(pair.publicKey);
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    server = createServer((_, response) => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    verifier = tokenVerifier({ mode: 'jwks', jwksUrl: `http://127.0.0.1:${port}/jwks.json`, issuer, audience, groupsClaim: 'groups' });
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const rs256 = (claims: { iss?: string; aud?: string } = {}) =>
    new SignJWT({})
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setSubject('oidc-user')
      .setIssuer(claims.iss ?? issuer)
      .setAudience(claims.aud ?? audience)
      .setExpirationTime('1h')
      .sign(privateKey);

  it('accepts an RS256 token from the key set with the right issuer and audience', async () => {
    expect(await verifier.verify(await rs256())).toEqual({ userId: 'oidc-user', groups: new Set() });
  });

  it('refuses another issuer or audience', async () => {
    await expect(verifier.verify(await rs256({ iss: 'https://evil.example' }))).rejects.toMatchObject({ code: 'token_invalid' });
    await expect(verifier.verify(await rs256({ aud: 'other-api' }))).rejects.toMatchObject({ code: 'token_invalid' });
  });

  it('refuses an HS256 token signed with the public key as the secret (algorithm confusion)', async () => {
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
      .setSubject('victim')
      .setIssuer(issuer)
      .setAudience(audience)
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(publicPem));
    await expect(verifier.verify(forged)).rejects.toMatchObject({ code: 'token_invalid' });
  });
});
