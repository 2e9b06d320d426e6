import type { APIGatewayAuthorizerResult } from 'aws-lambda';

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

export function allowPolicy(userId: string, methodArn: string): APIGatewayAuthorizerResult {
  return policy(userId, 'Allow', methodArn, { userId });
}

/**
 * A denial that says why: the ACCESS_DENIED gateway response turns it into a
 * 401 whose code (token_invalid, token_expired) comes from this context.
 */
export function denyPolicy(methodArn: string, errorCode: string, errorMessage: string): APIGatewayAuthorizerResult {
  return policy('anonymous', 'Deny', methodArn, { error_code: errorCode, error_message: errorMessage });
}

function policy(principalId: string, effect: 'Allow' | 'Deny', methodArn: string, context: Record<string, string>): APIGatewayAuthorizerResult {
  return {
    principalId,
    policyDocument: {
      Version: '2012-10-17',
      Statement: [{ Action: 'execute-api:Invoke', Effect: effect, Resource: wholeApiArn(methodArn) }],
    },
    context,
  };
}
