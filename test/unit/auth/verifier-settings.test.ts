import { describe, expect, it } from 'vitest';
import { loadVerifierSettings } from '../../../shared/auth/verifier-settings.js';
import { type Environment, readConfig } from '../../../shared/config.js';

const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:AuthSecret-AbCdEf';
/** The authorizer's settings as the configuration reads them from an environment. */
const authOf = (env: Environment) => readConfig(env).auth;
const noSecretRead = async (): Promise<string> => {
  throw new Error('The secret must not be read');
};

describe('the authorizer settings', () => {
  it('reads the HS256 secret named by AUTH_SECRET_ARN, with issuer and audience', async () => {
    const read: string[] = [];
    const settings = await loadVerifierSettings(authOf({ AUTH_SECRET_ARN: ARN, AUTH_ISSUER: 'iss', AUTH_AUDIENCE: 'aud' }), async (arn) => {
      read.push(arn);
      return 'from-the-extension';
    });
    expect(settings).toEqual({ mode: 'secret', secret: 'from-the-extension', issuer: 'iss', audience: 'aud', groupsClaim: 'groups' });
    expect(read).toEqual([ARN]);
  });

  it('prefers an inline AUTH_SECRET (sam local sets it over the stack ARN) and does not read the secret', async () => {
    expect(await loadVerifierSettings(authOf({ AUTH_SECRET_ARN: ARN, AUTH_SECRET: 'local' }), noSecretRead)).toMatchObject({
      mode: 'secret',
      secret: 'local',
    });
  });

  it('uses the JWKS URL when one is set, treating empty issuer and audience as unset', async () => {
    expect(
      await loadVerifierSettings(
        authOf({ AUTH_JWKS_URL: 'https://issuer.example/jwks', AUTH_ISSUER: '', AUTH_AUDIENCE: '' }),
        noSecretRead,
      ),
    ).toEqual({
      mode: 'jwks',
      jwksUrl: 'https://issuer.example/jwks',
      issuer: undefined,
      audience: undefined,
      groupsClaim: 'groups',
    });
  });

  it('refuses to start with no way to verify tokens', async () => {
    await expect(loadVerifierSettings(authOf({ AUTH_SECRET: '', AUTH_SECRET_ARN: '' }), noSecretRead)).rejects.toThrow(/AUTH_SECRET_ARN/);
  });
});
