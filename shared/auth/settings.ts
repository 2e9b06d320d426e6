import { extensionSecret } from './extension-secret.js';
import { groupsClaimName } from './groups.js';
import type { VerifierSettings } from './tokens.js';

/**
 * Which tokens the authorizer accepts, from the environment the stack (or the
 * local server) sets: a JWKS URL, or an HS256 secret given inline
 * (AUTH_SECRET, local) or by reference (AUTH_SECRET_ARN, the deployed stack,
 * so the secret never appears in the function's configuration; read through
 * the Parameters and Secrets Lambda Extension). GROUPS_CLAIM names the claim
 * that holds the user's groups (default `groups`; `cognito:groups` for Cognito).
 */
export async function loadVerifierSettings(
  env: NodeJS.ProcessEnv = process.env,
  readSecret: (arn: string) => Promise<string> = (arn) => extensionSecret(arn, env),
): Promise<VerifierSettings> {
  if (env.AUTH_SECRET_ARN && !env.AUTH_JWKS_URL && !env.AUTH_SECRET) {
    return verifierSettingsFromEnv({ ...env, AUTH_SECRET: await readSecret(env.AUTH_SECRET_ARN) });
  }
  return verifierSettingsFromEnv(env);
}

export function verifierSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): VerifierSettings {
  const issuer = env.AUTH_ISSUER || undefined;
  const audience = env.AUTH_AUDIENCE || undefined;
  const groupsClaim = groupsClaimName(env.GROUPS_CLAIM);
  if (env.AUTH_JWKS_URL) return { mode: 'jwks', jwksUrl: env.AUTH_JWKS_URL, issuer, audience, groupsClaim };
  if (env.AUTH_SECRET) return { mode: 'secret', secret: env.AUTH_SECRET, issuer, audience, groupsClaim };
  throw new Error('Set AUTH_JWKS_URL, AUTH_SECRET or AUTH_SECRET_ARN for the authorizer');
}
