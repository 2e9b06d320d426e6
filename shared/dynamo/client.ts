import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { config } from '../config.js';

let client: DynamoDBDocumentClient | undefined;

/**
 * One document client per process, created on first use and kept across warm
 * invocations. Short timeouts and few attempts: an unreachable table becomes
 * a 503 within seconds instead of hanging until the Lambda times out.
 */
export function dynamo(): DynamoDBDocumentClient {
  if (!client) {
    const { region, dynamodbEndpoint } = config();
    const base = new DynamoDBClient({
      region,
      maxAttempts: 3,
      requestHandler: { connectionTimeout: 1_000, requestTimeout: 5_000 },
      ...(dynamodbEndpoint ? { endpoint: dynamodbEndpoint } : {}),
    });
    client = DynamoDBDocumentClient.from(base, {
      marshallOptions: { removeUndefinedValues: true },
    });
  }
  return client;
}
