import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One DynamoDB Local for the whole run; each test server has its own tables in it and its own S3 stand-in.
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
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
  },
});
