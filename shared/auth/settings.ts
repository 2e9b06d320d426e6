import type { VerifierSettings } from './tokens.js';

/** Which tokens the authorizer accepts, from the environment the stack (or the local server) sets. */
export function verifierSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): VerifierSettings {
  const issuer = env.AUTH_ISSUER || undefined;
  const audience = env.AUTH_AUDIENCE || undefined;
  if (env.AUTH_JWKS_URL) return { mode: 'jwks', jwksUrl: env.AUTH_JWKS_URL, issuer, audience };
  if (env.AUTH_SECRET) return { mode: 'secret', secret: env.AUTH_SECRET, issuer, audience };
  throw new Error('Set AUTH_JWKS_URL or AUTH_SECRET for the authorizer');
}
