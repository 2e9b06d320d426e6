import type { APIGatewayAuthorizerResult, APIGatewayTokenAuthorizerEvent } from 'aws-lambda';
import { allowPolicy, denyPolicy } from '../shared/auth/policy.js';
import { verifierSettingsFromEnv } from '../shared/auth/settings.js';
import { TokenRejected, tokenVerifier, type TokenVerifier } from '../shared/auth/tokens.js';

let verifier: TokenVerifier | undefined;

const BEARER = /^Bearer ([^\s]+)$/;

export async function handler(event: APIGatewayTokenAuthorizerEvent): Promise<APIGatewayAuthorizerResult> {
  const token = BEARER.exec(event.authorizationToken ?? '')?.[1];
  // API Gateway answers this itself (identity validation expression); the throw covers direct calls.
  if (!token) throw new Error('Unauthorized');
  verifier ??= tokenVerifier(verifierSettingsFromEnv());
  try {
    const { userId } = await verifier.verify(token);
    return allowPolicy(userId, event.methodArn);
  } catch (error) {
    if (error instanceof TokenRejected) return denyPolicy(event.methodArn, error.code, error.message);
    throw error;
  }
}
