import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { TEST_WORKERS } from './test/support/workers.js';

/**
 * The files that take tens of seconds by design (timeouts run out, stalls,
 * cleanups settle, CDK bundles): started first, so that none is left running
 * alone at the end. Vitest orders by the durations of the last run when it
 * has them; a fresh clone has none.
 */
const SLOW_FILES = [
  'test/integration/randomized-faults.test.ts',
  'test/integration/function-timeout.test.ts',
  'test/integration/stalled-backend.test.ts',
  'test/infra/regions.test.ts',
  'test/integration/browser-uppy.test.ts',
  'test/infra/sam.test.ts',
  'test/infra/stack-settings.test.ts',
  'test/integration/write-protocols-under-faults.test.ts',
];

class SlowFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification) => {
      const index = SLOW_FILES.findIndex((slow) => file.moduleId.endsWith(slow));
      return index === -1 ? SLOW_FILES.length : index;
    };
    return sorted
      .map((file, order) => ({ file, order }))
      .sort((a, b) => rank(a.file) - rank(b.file) || a.order - b.order)
      .map(({ file }) => file);
  }
}

/**
 * Three lanes, one run: `npm test` runs them all (and the type check),
 * `npm run test:unit|test:integration|test:infra` one each (`--project`).
 * Only the integration lane starts DynamoDB Local (a JVM); the unit lane
 * needs neither Java nor a server.
 */
export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: TEST_WORKERS,
    sequence: { sequencer: SlowFilesFirst },
    setupFiles: ['test/support/shared-state-guard.ts'],
    // A hang guard, not a speed check: on a loaded 2-core machine (three workers, their DynamoDB Locals,
    // CDK synths) a test that takes 3 s alone has taken over 30 s. Speed is measured in `npm run bench`.
    testTimeout: 120_000,
    // What a passing test logs (provoked 5xx lines, CDK's bundling) is noise; a failing test's output is kept.
    silent: 'passed-only',
    hookTimeout: 120_000,
    env: {
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      // Request lines and EMF records of every test server would bury the test output;
      // test/integration/logging.test.ts turns both back on for its own server.
      POWERTOOLS_LOG_LEVEL: 'WARN',
      POWERTOOLS_METRICS_DISABLED: 'true',
      // Powertools then logs through the global console, which vitest captures: shown for failing tests only.
      POWERTOOLS_DEV: 'true',
      // CDK bundles through `npx esbuild`: npm's own warnings about the machine's npmrc are not test output.
      npm_config_loglevel: 'error',
    },
    projects: [
      // Pure logic, no global state: the files of a worker share its loaded modules.
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'], isolate: false } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          // One DynamoDB Local per worker; each test server has its own tables in its worker's and its own S3 stand-in.
          globalSetup: ['test/support/global-setup.ts'],
          // The files of a worker share its loaded modules: each file starts its own servers, so no state
          // is shared but code, and importing the handlers' graph once per worker instead of once per file
          // saved 1 min 48 s of CPU on 2 cores (import 94.6 s → 9.2 s summed). A file that changes
          // process.env puts it back (authorizer-secret.test.ts).
          isolate: false,
        },
      },
      // CDK's modules loaded once per worker, not once per file: the lane takes 27 s instead of 45 s.
      { extends: true, test: { name: 'infra', include: ['test/infra/**/*.test.ts'], isolate: false } },
    ],
  },
});
