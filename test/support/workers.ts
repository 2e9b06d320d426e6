import { availableParallelism } from 'node:os';

/**
 * Test workers at once: one more than the cores, since integration files
 * mostly wait (on timeouts, stalls, the cleanup). Vitest's default, one less
 * than the cores, runs a 2-core machine's files one after another.
 */
export const TEST_WORKERS = availableParallelism() + 1;

/** This worker's DynamoDB Local of the run's (VITEST_POOL_ID runs from 1 to the number of workers). */
export function workerDynamodb(endpoints: readonly string[]): string {
  const worker = Number(process.env.VITEST_POOL_ID ?? '1');
  return endpoints[(worker - 1) % endpoints.length]!;
}
