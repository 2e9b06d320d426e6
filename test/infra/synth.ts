import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Environment } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { messagingApp } from '../../infra/stack/messaging-app.js';
import type { Json } from '../support/api.js';

export interface Synthesized {
  template: Template;
  /** The cloud assembly directory: the bundles live under it, as under cdk.out. */
  outdir: string;
  /** cdk-nag's and the other validation plugins' findings that fail or warn. */
  validationReport: { pluginReports: { pluginName: string; violations: unknown[] }[] };
  remove(): void;
}

/**
 * Synthesizes the app as `npx cdk synth` does (cdk-nag included, asset
 * metadata on as the CLI sets it) into a temporary directory. Throws if a
 * validation plugin reports an error. Bundling every function takes seconds,
 * so only tests of the bundles ask for it; without it the template is the
 * same but the asset directories are empty.
 */
export function synthesize(context: Record<string, unknown> = {}, options: { bundle?: boolean } = {}, env: Environment = {}): Synthesized {
  const outdir = mkdtempSync(join(tmpdir(), 'messaging-cdk-'));
  // Assets are bundled as the stack is built, in its constructors.
  const { stack, assembly } = withoutBundlingNotices(() => {
    const built = messagingApp({ outdir, context: testContext(context, options) }, env);
    return { ...built, assembly: built.app.synth() };
  });
  return {
    template: Template.fromJSON(assembly.getStackArtifact(stack.artifactId).template),
    outdir,
    validationReport: JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')),
    remove: () => rmSync(outdir, { recursive: true, force: true }),
  };
}

type Resources = Record<string, { Type: string; Properties: Record<string, Json>; Metadata?: Record<string, Json> }>;

export const resourcesOf = (template: Template, type: string): Resources => template.findResources(type) as Resources;

export function testContext(context: Record<string, unknown> = {}, options: { bundle?: boolean } = {}): Record<string, unknown> {
  return {
    'aws:cdk:enable-asset-metadata': true,
    // The CLI's --exclusively mechanism: the stacks listed here are bundled, none when empty. A test's bundling
    // downloads nothing: sharp for this machine's architecture, from the npm cache that `npm ci` filled.
    ...(options.bundle ? { architecture: HOST_ARCHITECTURE, offlineBundling: true } : { 'aws:cdk:bundling-stacks': [] }),
    ...context,
  };
}

/** This machine's architecture as Lambda names it: the one whose Linux sharp `npm ci` put in the npm cache. */
export const HOST_ARCHITECTURE = process.arch === 'arm64' ? 'arm64' : 'x86_64';

/**
 * Whether `npm ci` here cached the sharp that a bundled synth installs, Lambda's Linux with glibc on one of
 * its architectures: elsewhere (macOS, musl) it holds another platform's, and the tests that bundle are skipped.
 */
export const CAN_BUNDLE_OFFLINE =
  process.platform === 'linux' &&
  (process.arch === 'x64' || process.arch === 'arm64') &&
  Boolean((process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime);

/**
 * CDK announces each asset it bundles straight on stderr ("Bundling asset
 * <path>..."), past the test runner's capture; the suite's output is for
 * failures. Everything else written to stderr passes.
 */
function withoutBundlingNotices<T>(run: () => T): T {
  const write = process.stderr.write;
  process.stderr.write = ((chunk: unknown, ...rest: unknown[]) =>
    typeof chunk === 'string' && chunk.startsWith('Bundling asset ')
      ? true
      : (write as (...args: unknown[]) => boolean).call(process.stderr, chunk, ...rest)) as typeof process.stderr.write;
  try {
    return run();
  } finally {
    process.stderr.write = write;
  }
}
