import { join } from 'node:path';
import { build, type ImportKind } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { bundleSettings, esbuildOptions } from '../../infra/bundling.js';
import { REPOSITORY_ROOT } from '../../infra/repository.js';
import { AUTHORIZER_ENTRY, CLEANUP_ENTRY, routes } from '../../infra/routes.js';

const ENTRIES = [...routes.map((route) => route.entry), AUTHORIZER_ENTRY, CLEANUP_ENTRY];

/** How each module the bundles leave out is imported, over every function the stack deploys. */
async function importsOfExternals(): Promise<Map<string, Set<ImportKind>>> {
  const kinds = new Map<string, Set<ImportKind>>(bundleSettings.external.map((name) => [name, new Set()]));
  // One build of every entry: its metafile's inputs are the union of what each function bundles.
  const { metafile } = await build({
    ...esbuildOptions(),
    entryPoints: ENTRIES.map((entry) => join(REPOSITORY_ROOT, entry)),
    bundle: true,
    write: false,
    metafile: true,
    sourcemap: false,
    outdir: join(REPOSITORY_ROOT, 'cdk.out', 'bundling-test'),
    logLevel: 'silent',
  });
  for (const input of Object.values(metafile.inputs)) {
    for (const record of input.imports) {
      const name = record.original ?? record.path;
      kinds.get(name)?.add(record.kind);
    }
  }
  return kinds;
}

describe('function bundles', () => {
  it('leave out only modules the SDK loads with import(), on paths the functions never take', async () => {
    const kinds = await importsOfExternals();
    for (const [name, seen] of kinds) {
      // Each is imported somewhere (else the entry is dead) and only dynamically (a static import would fail at load).
      expect([...seen], name).toEqual(['dynamic-import']);
    }
  }, 120_000);
});
