import type { APIGatewayAuthorizerResult, APIGatewayTokenAuthorizerEvent } from 'aws-lambda';
import { allowPolicy, denyPolicy } from '../shared/auth/policy.js';
import { loadVerifierSettings } from '../shared/auth/settings.js';
import { TokenRejected, tokenVerifier, type TokenVerifier } from '../shared/auth/tokens.js';

// Settings (and the secret behind AUTH_SECRET_ARN) are read once per cold start.
let verifier: Promise<TokenVerifier> | undefined;

const BEARER = /^Bearer ([^\s]+)$/;

export async function handler(event: APIGatewayTokenAuthorizerEvent): Promise<APIGatewayAuthorizerResult> {
  const token = BEARER.exec(event.authorizationToken ?? '')?.[1];
  // API Gateway answers this itself (identity validation expression); the throw covers direct calls.
  if (!token) throw new Error('Unauthorized');
  verifier ??= loadVerifierSettings().then(tokenVerifier);
  const tokens = await verifier.catch((error: unknown) => {
    verifier = undefined; // a failed secret read is retried on the next call, not cached
    throw error;
  });
  try {
    const { userId } = await tokens.verify(token);
    return allowPolicy(userId, event.methodArn);
  } catch (error) {
    if (error instanceof TokenRejected) return denyPolicy(event.methodArn, error.code, error.message);
    throw error;
  }
}
