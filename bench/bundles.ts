import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build, type Metafile } from 'esbuild';
import { authorizerFunction, realtimeAuthorizerFunction, stackFunctions } from '../infra/declarations/function-settings.js';
import { REPOSITORY_ROOT } from '../infra/declarations/repository.js';
import { bundleLayout, esbuildOptions } from '../infra/stack/bundling.js';

/**
 * Every function bundled exactly as the stack deploys it (the shared esbuild
 * settings), plus the bare reference handler the cold starts are compared to.
 */
export const BUNDLE_DIRECTORY = join(REPOSITORY_ROOT, 'bench', '.bundles');
export const REFERENCE_NAME = 'Reference';
const REFERENCE_ENTRY = 'bench/reference-handler.ts';

const KB = 1000;
const FUNCTION_LIMIT = 300 * KB;
const AUTHORIZER_LIMIT = 100 * KB;

export interface BundleFigure {
  name: string;
  entry: string;
  /** The bundle file the cold starts import, relative to the repository root. */
  file: string;
  minifiedBytes: number;
  gzippedBytes: number;
  limitBytes: number;
  withinLimit: boolean;
  /** The inputs that weigh most in the output, largest first (what to cut when over the limit). */
  largestInputs: { path: string; bytes: number }[];
}

/** The authorizers sit in front of every request and connection: their bundles are held to less. */
const AUTHORIZERS: ReadonlySet<string> = new Set([authorizerFunction.name, realtimeAuthorizerFunction.name]);

/** What is bundled: every function the stack deploys (infra/declarations/function-settings.ts), each with its size limit, and the reference. */
export function bundledFunctions(): { name: string; entry: string; limitBytes: number }[] {
  return [
    ...stackFunctions.map(({ name, entry }) => ({ name, entry, limitBytes: AUTHORIZERS.has(name) ? AUTHORIZER_LIMIT : FUNCTION_LIMIT })),
    { name: REFERENCE_NAME, entry: REFERENCE_ENTRY, limitBytes: FUNCTION_LIMIT },
  ];
}

export async function measureBundles(): Promise<BundleFigure[]> {
  rmSync(BUNDLE_DIRECTORY, { recursive: true, force: true });
  const figures: BundleFigure[] = [];
  for (const fn of bundledFunctions()) figures.push(await bundle(fn.name, fn.entry, fn.limitBytes));
  return figures;
}

async function bundle(name: string, entry: string, limitBytes: number): Promise<BundleFigure> {
  const directory = join(BUNDLE_DIRECTORY, name);
  mkdirSync(directory, { recursive: true });
  // Laid out as the stack deploys it: the file and the package.json that makes it a module.
  const file = join(directory, bundleLayout.file);
  writeFileSync(join(directory, 'package.json'), JSON.stringify(bundleLayout.packageJson));
  const result = await build({
    ...esbuildOptions(),
    entryPoints: [join(REPOSITORY_ROOT, entry)],
    outfile: file,
    bundle: true,
    metafile: true,
    write: true,
    logLevel: 'silent',
  });
  const code = readFileSync(file);
  return {
    name,
    entry,
    file: relative(REPOSITORY_ROOT, file),
    minifiedBytes: code.length,
    gzippedBytes: gzipSync(code, { level: 9 }).length,
    limitBytes,
    withinLimit: code.length <= limitBytes,
    largestInputs: largestInputs(result.metafile, 5),
  };
}

/** Bytes each input contributes to the output, grouped by package so the SDK's many files read as one line. */
function largestInputs(metafile: Metafile, count: number): { path: string; bytes: number }[] {
  const byPackage = new Map<string, number>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [path, { bytesInOutput }] of Object.entries(output.inputs)) {
      const key = packageOf(path);
      byPackage.set(key, (byPackage.get(key) ?? 0) + bytesInOutput);
    }
  }
  return [...byPackage.entries()]
    .map(([path, bytes]) => ({ path, bytes }))
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, count);
}

function packageOf(path: string): string {
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  return match ? match[1]! : path;
}
