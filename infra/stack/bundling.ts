import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BuildOptions } from 'esbuild';
import { REPOSITORY_ROOT } from '../declarations/repository.js';

// How every function is bundled: one set of esbuild settings shared by the
// CDK stack (NodejsFunction, local esbuild, no Docker) and the benchmark, so
// the bench measures the bundles that deploy.

/** Keep in step with the stack's Lambda runtime (Node.js 24). */
export const LAMBDA_NODE_TARGET = 'node24';

/**
 * Native modules no bundle can hold: imported as they are, installed beside
 * the bundle of the one function that uses them (sharp: the preview worker,
 * installSharp below; test/infra/bundling.test.ts holds that no other imports it).
 */
export const NATIVE_MODULES = ['sharp'] as const;

export const bundleSettings = {
  platform: 'node' as const,
  target: LAMBDA_NODE_TARGET,
  format: 'esm' as const,
  minify: true,
  sourcemap: true,
  // Prefer ES modules so the AWS SDK v3 tree-shakes.
  mainFields: ['module', 'main'],
  // ESM bundles of CommonJS dependencies still call require() for Node built-ins.
  banner: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  // Bundle the AWS SDK instead of using the runtime's copy: pinned versions, smaller cold start.
  // Except the modules the SDK only import()s on a path our functions never take (bundled,
  // they weigh ~140 KB in every function; measured by `npm run bench`):
  // - the credential providers past the first link of the default chain: Lambda (and sam
  //   local) put the function's credentials in the environment, the first link;
  // - the event-stream serde, which only operations with an event-stream member load
  //   (DynamoDB has none, and S3 is called without its client: shared/s3/bucket.ts).
  // test/infra/bundling.test.ts proves each is reached only through import().
  external: [
    '@aws-sdk/credential-provider-ini',
    '@aws-sdk/credential-provider-process',
    '@aws-sdk/credential-provider-sso',
    '@aws-sdk/credential-provider-web-identity',
    '@aws-sdk/credential-provider-http',
    '@smithy/credential-provider-imds',
    '@smithy/core/event-streams',
    ...NATIVE_MODULES,
  ] as string[],
};

/**
 * The same settings as esbuild's own options, for the tools that call esbuild
 * directly (the benchmark, the bundling test): only the banner is spelled
 * differently (CDK's NodejsFunction takes it as a string).
 */
export function esbuildOptions(): BuildOptions {
  const { banner, ...rest } = bundleSettings;
  return { ...rest, banner: { js: banner } };
}

/**
 * What a deployed function's directory holds: the ESM bundle as `index.js`
 * beside a package.json that declares it a module. CDK names ESM bundles
 * `index.mjs`, which Lambda runs but `sam local` has failed to load; a `.js`
 * file under `"type": "module"` is ESM to Node and an ordinary handler file
 * (`index.handler`) to every tool.
 */
export const bundleLayout = {
  file: 'index.js',
  packageJson: { type: 'module' },
} as const;

/**
 * The command that puts sharp, at the version package.json pins, beside a
 * bundle for Lambda's platform (Linux, glibc, the functions' architecture):
 * npm installs the prebuilt @img/sharp-linux-<arch> and its libvips from the
 * registry whatever machine synthesizes, so no Docker is needed.
 */
export function installSharp(outputDir: string, architecture: 'arm64' | 'x86_64'): string {
  const { dependencies } = JSON.parse(readFileSync(join(REPOSITORY_ROOT, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  const cpu = architecture === 'arm64' ? 'arm64' : 'x64';
  return [
    `npm install --prefix "${outputDir}" --no-save --no-package-lock --no-audit --no-fund --omit=dev`,
    `--os=linux --cpu=${cpu} --libc=glibc sharp@${dependencies.sharp}`,
  ].join(' ');
}
