import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../infra/local/dynamodb.js';

/**
 * One DynamoDB Local (in memory) for the whole run, started before any test
 * file: each test server creates its own tables in it under a prefix of its
 * own (test/support/api.ts). DYNAMODB_ENDPOINT, when set, is used instead
 * (e.g. a machine without Java running DynamoDB Local elsewhere).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const given = process.env.DYNAMODB_ENDPOINT;
  if (given) {
    project.provide('dynamodbEndpoint', given);
    return async () => {};
  }
  const dynamodb = await startDynamoDbLocal('127.0.0.1');
  project.provide('dynamodbEndpoint', dynamodb.endpoint);
  return dynamodb.close;
}

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
  }
}
