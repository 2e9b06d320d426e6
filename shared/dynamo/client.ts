import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Config } from '../config.js';
import { boundedTransport } from '../transport.js';

/**
 * Bounded in time whatever the backend does: a connection that does not open
 * within 1 s or an answer that does not come within 3 s fails the attempt, and
 * the SDK makes at most 3 attempts (its standard retry strategy, with backoff),
 * and no attempt runs past the invocation's budget (shared/deadline.ts), so a
 * stalled or unreachable table ends in a 503 before the function's timeout.
 * Every write the services make is safe to retry: they are conditional, or
 * transactions with a ClientRequestToken.
 */
export const DYNAMODB_TIMEOUTS = { maxAttempts: 3, connectionTimeout: 1_000, requestTimeout: 3_000 } as const;

/**
 * Credentials the client asks for at each request. The SDK keeps whatever a
 * provider first answers (and shares one answer among concurrent requests)
 * unless the provider says it memoizes itself, which this one does, so that
 * each request is signed with the key of the function making it.
 */
function resolvedAtEachCall(credentials: NonNullable<Config['dynamodbCredentials']>) {
  const provider = typeof credentials === 'function' ? async () => credentials() : async () => credentials;
  return Object.assign(provider, { memoized: true });
}

export function createDynamoClient(config: Config): DynamoDBDocumentClient {
  const base = new DynamoDBClient({
    region: config.region,
    maxAttempts: DYNAMODB_TIMEOUTS.maxAttempts,
    requestHandler: boundedTransport(DYNAMODB_TIMEOUTS),
    ...(config.dynamodbEndpoint ? { endpoint: config.dynamodbEndpoint } : {}),
    ...(config.dynamodbCredentials
      ? { credentials: resolvedAtEachCall(config.dynamodbCredentials) }
      : config.credentials
        ? { credentials: config.credentials }
        : {}),
  });
  return DynamoDBDocumentClient.from(base, { marshallOptions: { removeUndefinedValues: true } });
}
