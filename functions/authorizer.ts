import type { APIGatewayAuthorizerResult, APIGatewayTokenAuthorizerEvent } from 'aws-lambda';
import { allowPolicy, denyPolicy } from '../shared/auth/policy.js';
import { TokenRejected } from '../shared/auth/tokens.js';
import { lazyVerifier } from '../shared/auth/verifier-settings.js';
import { type Config, lambdaConfig } from '../shared/config.js';

const BEARER = /^Bearer ([^\s]+)$/;

/** A TOKEN authorizer as API Gateway (and the local gateway, infra/local/gateway.ts) invokes it: the event alone, the result awaited. */
export type TokenAuthorizer = (event: APIGatewayTokenAuthorizerEvent) => Promise<APIGatewayAuthorizerResult>;

/** The authorizer on the `auth` settings of a configuration, read (with the secret behind AUTH_SECRET_ARN) once per cold start. */
function tokenAuthorizer(config: () => Config): TokenAuthorizer {
  const verifier = lazyVerifier(() => config().auth);
  return async (event) => {
    const token = BEARER.exec(event.authorizationToken ?? '')?.[1];
    // API Gateway answers this itself (identity validation expression); the throw covers direct calls.
    if (!token) throw new Error('Unauthorized');
    // A failed secret read is retried on the next call, not cached.
    const tokens = await verifier();
    try {
      return allowPolicy(await tokens.verify(token), event.methodArn);
    } catch (error) {
      if (error instanceof TokenRejected) return denyPolicy(event.methodArn, error.code, error.message);
      throw error;
    }
  };
}

/** On Lambda: the process's configuration. The local server runs it on the configuration of its Composition (withConfig). */
export const handler = Object.assign(tokenAuthorizer(lambdaConfig), { withConfig: (config: Config) => tokenAuthorizer(() => config) });
