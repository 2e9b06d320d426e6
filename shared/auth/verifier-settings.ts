import type { AuthConfig } from '../config.js';
import { extensionSecret } from './extension-secret.js';
import { groupsClaimName } from './groups.js';
import { type TokenVerifier, tokenVerifier, type VerifierSettings } from './tokens.js';

/**
 * Which tokens the authorizer accepts, from its configuration (`auth` of
 * shared/config.ts): a JWKS URL, or an HS256 secret given inline (local) or by
 * reference (the deployed stack, so the secret never appears in the
 * function's configuration; read through the Parameters and Secrets Lambda
 * Extension). The claim named by GROUPS_CLAIM (default `groups`;
 * `cognito:groups` for Cognito) holds the user's groups.
 */
export async function loadVerifierSettings(
  auth: AuthConfig,
  readSecret: (arn: string) => Promise<string> = (arn) => extensionSecret(arn, auth.secretsExtensionPort),
): Promise<VerifierSettings> {
  const { jwksUrl, secretArn, issuer, audience } = auth;
  const groupsClaim = groupsClaimName(auth.groupsClaim);
  if (jwksUrl) return { mode: 'jwks', jwksUrl, issuer, audience, groupsClaim };
  // An inline secret wins over the reference (sam local sets both), so the extension is only asked when needed.
  const secret = auth.secret ?? (secretArn && (await readSecret(secretArn)));
  if (secret) return { mode: 'secret', secret, issuer, audience, groupsClaim };
  throw new Error('Set AUTH_JWKS_URL, AUTH_SECRET or AUTH_SECRET_ARN for the authorizer');
}

/**
 * The verifier of these settings, built on first use and kept (once per cold
 * start); a failed build (the secret's read) is not kept, so the next call
 * tries again. The REST and the real-time authorizers each hold one.
 */
export function lazyVerifier(auth: () => AuthConfig): () => Promise<TokenVerifier> {
  let verifier: Promise<TokenVerifier> | undefined;
  return () => {
    verifier ??= loadVerifierSettings(auth()).then(tokenVerifier);
    return verifier.catch((error: unknown) => {
      verifier = undefined;
      throw error;
    });
  };
}
