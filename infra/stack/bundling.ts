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

/** A package-lock.json's `packages`: each install path and what npm needs of its entry. */
type LockPackages = Record<
  string,
  { version: string; dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> }
>;

/** Where Node would find `name` from the package installed at `from` (its own node_modules first, then each parent's). */
function installPathOf(packages: LockPackages, from: string, name: string): string {
  for (let directory = from; ; directory = directory.slice(0, Math.max(0, directory.lastIndexOf('/node_modules/')))) {
    const path = `${directory ? `${directory}/` : ''}node_modules/${name}`;
    if (packages[path]) return path;
    if (!directory) throw new Error(`package-lock.json has no ${name} for ${from || 'the root'}`);
  }
}

/**
 * The repository's lockfile cut down to sharp and what it depends on, every
 * platform's binary package included (npm skips the ones for other platforms):
 * `npm ci` installs it at the versions and integrity hashes the repository
 * tested, and needs no registry metadata, so `--offline` works from the cache
 * that the repository's own `npm ci` filled.
 */
export function sharpLockfile(lock: { packages: LockPackages }): { packageJson: object; lockfile: object } {
  const packages: LockPackages = {};
  const root = installPathOf(lock.packages, '', 'sharp');
  const pending = [root];
  for (let path = pending.pop(); path !== undefined; path = pending.pop()) {
    const entry = lock.packages[path];
    if (!entry || packages[path]) continue;
    packages[path] = entry;
    const names = Object.keys({ ...entry.dependencies, ...entry.optionalDependencies });
    pending.push(...names.map((name) => installPathOf(lock.packages, path, name)));
  }
  const dependencies = { sharp: lock.packages[root]?.version ?? '' };
  return {
    packageJson: { ...bundleLayout.packageJson, dependencies },
    lockfile: { lockfileVersion: 3, requires: true, packages: { '': { dependencies }, ...packages } },
  };
}

/** For whom sharp is installed: the functions' architecture (Linux, glibc), and whether npm may reach its registry. */
export interface SharpTarget {
  architecture: 'arm64' | 'x86_64';
  /** Only from npm's cache: a synth that must not download (the tests) fails instead. */
  offline: boolean;
}

/**
 * The commands that put sharp, as package-lock.json pins it, beside a bundle
 * for Lambda's platform: npm installs the prebuilt @img/sharp-linux-<cpu> and
 * its libvips whatever machine synthesizes, so no Docker is needed; then the
 * binary's package must be there (npm skips an optional package it could not
 * fetch, which would leave a worker that cannot load sharp).
 */
export function installSharp(outputDir: string, { architecture, offline }: SharpTarget): string[] {
  const lock = JSON.parse(readFileSync(join(REPOSITORY_ROOT, 'package-lock.json'), 'utf8')) as { packages: LockPackages };
  const { packageJson, lockfile } = sharpLockfile(lock);
  const cpu = architecture === 'arm64' ? 'arm64' : 'x64';
  return [
    writeFilesCommand(outputDir, { 'package.json': packageJson, 'package-lock.json': lockfile }),
    [
      `npm ci --prefix "${outputDir}" --omit=dev --no-audit --no-fund --loglevel=warn --os=linux --cpu=${cpu} --libc=glibc`,
      ...(offline ? ['--offline'] : []),
    ].join(' '),
    `node -e "require('fs').statSync(process.argv[1])" "${join(outputDir, 'node_modules', '@img', `sharp-linux-${cpu}`, 'package.json')}"`,
  ];
}

/** A plain-node command that writes each file as JSON into `directory` (base64 on the command line: no shell quoting). */
export function writeFilesCommand(directory: string, files: Record<string, object>): string {
  const payload = Buffer.from(JSON.stringify(files)).toString('base64');
  const script = [
    "const fs = require('fs'), path = require('path')",
    `const files = JSON.parse(Buffer.from('${payload}', 'base64'))`,
    'for (const name in files) fs.writeFileSync(path.join(process.argv[1], name), JSON.stringify(files[name], null, 2))',
  ].join('; ');
  return `node -e "${script}" "${directory}"`;
}
