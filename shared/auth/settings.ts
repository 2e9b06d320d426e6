import type { AuthConfig } from '../config.js';
import { extensionSecret } from './extension-secret.js';
import type { VerifierSettings } from './tokens.js';

/**
 * Which tokens the authorizer accepts, from its configuration (`auth` of
 * shared/config.ts): a JWKS URL, or an HS256 secret given inline (local) or by
 * reference (the deployed stack, so the secret never appears in the
 * function's configuration; read through the Parameters and Secrets Lambda
 * Extension).
 */
export async function loadVerifierSettings(
  auth: AuthConfig,
  readSecret: (arn: string) => Promise<string> = (arn) => extensionSecret(arn, auth.secretsExtensionPort),
): Promise<VerifierSettings> {
  const { jwksUrl, secretArn, issuer, audience } = auth;
  if (jwksUrl) return { mode: 'jwks', jwksUrl, issuer, audience };
  // An inline secret wins over the reference (sam local sets both), so the extension is only asked when needed.
  const secret = auth.secret ?? (secretArn && (await readSecret(secretArn)));
  if (secret) return { mode: 'secret', secret, issuer, audience };
  throw new Error('Set AUTH_JWKS_URL, AUTH_SECRET or AUTH_SECRET_ARN for the authorizer');
}
