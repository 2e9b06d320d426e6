import type { APIGatewayAuthorizerResult } from 'aws-lambda';
import { encodeGroups, GROUPS_CONTEXT_KEY } from './groups.js';
import type { TokenIdentity } from './tokens.js';

/**
 * The whole API of the method's stage: `arn:...:<api>/<stage>/*\/*`.
 * API Gateway caches the authorizer's policy per token; a policy naming only
 * the first method would deny every other route for the cache's lifetime.
 */
export function wholeApiArn(methodArn: string): string {
  const [prefix, path = ''] = methodArn.split(/:(?=[^:]*$)/) as [string, string?];
  const [apiId, stage] = path.split('/');
  return `${prefix}:${apiId}/${stage}/*/*`;
}

/** The functions read the user and the groups from the context (shared/http/request.ts), always both. */
export function allowPolicy({ userId, groups }: TokenIdentity, methodArn: string): APIGatewayAuthorizerResult {
  return policy(userId, 'Allow', methodArn, { userId, [GROUPS_CONTEXT_KEY]: encodeGroups(groups) });
}

/**
 * A denial that says why: the ACCESS_DENIED gateway response turns it into a
 * 401 whose code (token_invalid, token_expired) comes from this context.
 */
export function denyPolicy(methodArn: string, errorCode: string, errorMessage: string): APIGatewayAuthorizerResult {
  return policy('anonymous', 'Deny', methodArn, { error_code: errorCode, error_message: errorMessage });
}

function policy(
  principalId: string,
  effect: 'Allow' | 'Deny',
  methodArn: string,
  context: Record<string, string>,
): APIGatewayAuthorizerResult {
  return {
    principalId,
    policyDocument: {
      Version: '2012-10-17',
      Statement: [{ Action: 'execute-api:Invoke', Effect: effect, Resource: wholeApiArn(methodArn) }],
    },
    context,
  };
}
