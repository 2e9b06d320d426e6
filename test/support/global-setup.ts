import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../infra/local/dynamodb.js';
import { TEST_WORKERS } from './workers.js';

/**
 * One DynamoDB Local (in memory) per test worker, started before any test
 * file: each test server creates its own tables in its worker's under a
 * prefix of its own (test/support/api.ts). One for the whole run made every
 * worker queue behind one JVM: the suite's files took up to ten times as
 * long as alone, with the cores half idle. DYNAMODB_ENDPOINT, when set, is
 * used instead by every worker (e.g. a machine without Java running
 * DynamoDB Local elsewhere).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const given = process.env.DYNAMODB_ENDPOINT;
  if (given) {
    project.provide('dynamodbEndpoints', [given]);
    return async () => {};
  }
  const started = await Promise.all(Array.from({ length: TEST_WORKERS }, () => startDynamoDbLocal('127.0.0.1')));
  project.provide(
    'dynamodbEndpoints',
    started.map((dynamodb) => dynamodb.endpoint),
  );
  return async () => {
    await Promise.all(started.map((dynamodb) => dynamodb.close()));
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoints: string[];
  }
}
