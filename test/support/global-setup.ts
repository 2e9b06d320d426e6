import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../infra/local/dynamodb.js';
import { unusedGrants } from './grants-used.js';
import { TEST_WORKERS } from './workers.js';

/**
 * One DynamoDB Local (in memory) per test worker, started before any test
 * file: each test server creates its own tables in its worker's under a
 * prefix of its own (test/support/api.ts). One for the whole run made every
 * worker queue behind one JVM: the suite's files took up to ten times as
 * long as alone, with the cores half idle. DYNAMODB_ENDPOINT, when set, is
 * used instead by every worker (e.g. a machine without Java running
 * DynamoDB Local elsewhere).
 *
 * And the run's folder where the test servers record the grants their
 * functions used (test/support/grants-used.ts), judged once the lane has run.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const grantsDirectory = mkdtempSync(join(tmpdir(), 'grants-used-'));
  project.provide('grantsDirectory', grantsDirectory);
  const given = process.env.DYNAMODB_ENDPOINT;
  const started = given ? [] : await Promise.all(Array.from({ length: TEST_WORKERS }, () => startDynamoDbLocal('127.0.0.1')));
  project.provide('dynamodbEndpoints', given ? [given] : started.map((dynamodb) => dynamodb.endpoint));
  return async () => {
    await Promise.all(started.map((dynamodb) => dynamodb.close()));
    await judgeGrants(project, grantsDirectory);
    rmSync(grantsDirectory, { recursive: true, force: true });
  };
}

/**
 * Fails the run on a grant no call used, only when every file of the lane ran and no test was filtered
 * out: a part of the lane exercises a part of the grants. (A failed file may leave a grant unused: the
 * run fails anyway.) A global teardown's throw is only logged by vitest, so the finding sets the exit code.
 */
async function judgeGrants(project: TestProject, directory: string): Promise<void> {
  const { testFiles } = await project.globTestFiles();
  const ran = project.vitest.state.getTestModules().filter((module) => module.project.name === project.name);
  const whole =
    project.vitest.config.testNamePattern === undefined &&
    testFiles.every((file) => ran.some((module) => module.moduleId === file && module.state() !== 'skipped'));
  if (!whole) return;
  const { unused, usedAfterAll } = unusedGrants(directory);
  if (unused.length === 0 && usedAfterAll.length === 0) return;
  console.error(
    [
      'Least privilege: grants of infra/declarations/permissions.ts that no integration test used (remove them, or list them',
      'in test/support/grants-used.ts with why no test can reach them):',
      ...unused.map((grant) => `  ${grant}`),
      ...(usedAfterAll.length ? ['Listed there as unused, but used:', ...usedAfterAll.map((grant) => `  ${grant}`)] : []),
    ].join('\n'),
  );
  process.exitCode = 1;
}

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoints: string[];
    grantsDirectory: string;
  }
}
