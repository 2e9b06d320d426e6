import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Three lanes, one run: `npm test` runs them all (and the type check),
 * `npm run test:unit|test:integration|test:infra` one each (`--project`).
 * Only the integration lane starts DynamoDB Local (a JVM); the unit lane
 * needs neither Java nor a server.
 */
export default defineConfig({
  test: {
    pool: 'forks',
    // Vitest's default is one worker less than the cores: one on a 2-core machine, the suite then runs
    // file after file. Integration files mostly wait (on timeouts, stalls, the cleanup), so one more
    // worker than cores keeps the cores busy.
    maxWorkers: availableParallelism() + 1,
    testTimeout: 30_000,
    // What a passing test logs (provoked 5xx lines, CDK's bundling) is noise; a failing test's output is kept.
    silent: 'passed-only',
    hookTimeout: 60_000,
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
          // One DynamoDB Local for the whole run; each test server has its own tables in it and its own S3 stand-in.
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
      { extends: true, test: { name: 'infra', include: ['test/infra/**/*.test.ts'] } },
    ],
  },
});
