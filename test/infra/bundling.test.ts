import { join, relative } from 'node:path';
import { build, type ImportKind, type Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundleSettings, esbuildOptions, NATIVE_MODULES } from '../../infra/bundling.js';
import { REPOSITORY_ROOT } from '../../infra/repository.js';
import {
  fanOutFunction,
  previewFunction,
  realtimeAuthorizerFunction,
  realtimePublisherFunction,
  stackFunctions,
} from '../../infra/stack-functions.js';

/** Every function the stack deploys (infra/stack-functions.ts). */
const ENTRIES = stackFunctions.map(({ entry }) => entry);

/** One build of every entry: its metafile's inputs are the union of what each function bundles, its outputs each function's own. */
async function buildAll(): Promise<Metafile> {
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
  return metafile;
}

/** How each module the bundles leave out is imported, over every function the stack deploys. */
function importsOfExternals(metafile: Metafile): Map<string, Set<ImportKind>> {
  const kinds = new Map<string, Set<ImportKind>>(bundleSettings.external.map((name) => [name, new Set()]));
  for (const input of Object.values(metafile.inputs)) {
    for (const record of input.imports) {
      const name = record.original ?? record.path;
      kinds.get(name)?.add(record.kind);
    }
  }
  return kinds;
}

/** The repository's own modules that end up in a function's bundle (bytes in the output, not merely imported). */
function ownModulesOf(metafile: Metafile, entry: string): string[] {
  const output = Object.values(metafile.outputs).find(
    (candidate) => candidate.entryPoint && relative(REPOSITORY_ROOT, join(REPOSITORY_ROOT, candidate.entryPoint)) === entry,
  );
  if (!output) throw new Error(`no bundle for ${entry}`);
  return Object.entries(output.inputs)
    .filter(([path, { bytesInOutput }]) => bytesInOutput > 0 && !path.includes('node_modules'))
    .map(([path]) => relative(REPOSITORY_ROOT, join(REPOSITORY_ROOT, path)));
}

describe('function bundles', () => {
  let metafile: Metafile;
  beforeAll(async () => {
    metafile = await buildAll();
  });

  it('import sharp (native, installed beside its bundle only) in the preview worker alone', () => {
    const importers = Object.values(metafile.outputs)
      .filter((output) => output.imports.some((record) => record.path === 'sharp' && record.external))
      .map((output) => relative(REPOSITORY_ROOT, join(REPOSITORY_ROOT, output.entryPoint ?? '')));
    expect(importers).toEqual([previewFunction.entry]);
  });

  it('leave out only modules the SDK loads with import(), on paths the functions never take', () => {
    for (const [name, seen] of importsOfExternals(metafile)) {
      if ((NATIVE_MODULES as readonly string[]).includes(name)) continue;
      // Each is imported somewhere (else the entry is dead) and only dynamically (a static import would fail at load).
      expect([...seen], name).toEqual(['dynamic-import']);
    }
  });

  // The composition root (shared/app.ts) builds every part, and every function imports it: each part is a
  // function, so what a function does not use stays out of its bundle (class members would not).
  it('carry only the parts their function uses: no S3 calls where no file is written, read or removed', () => {
    const getConversation = ownModulesOf(metafile, 'functions/conversations/get.ts');
    expect(getConversation).toContain('shared/conversations/service.ts');
    for (const absent of [
      'shared/s3/bucket.ts',
      'shared/s3/presigner.ts',
      'shared/attachments/service.ts',
      'shared/uploads/service.ts',
      'shared/files/s3-file-store.ts',
    ]) {
      expect(getConversation, absent).not.toContain(absent);
    }
    const getAttachment = ownModulesOf(metafile, 'functions/attachments/get.ts');
    expect(getAttachment).toContain('shared/s3/presigner.ts');
    for (const absent of ['shared/s3/bucket.ts', 'shared/attachments/uploads.ts', 'shared/attachments/leftovers.ts'])
      expect(getAttachment, absent).not.toContain(absent);
    const upload = ownModulesOf(metafile, 'functions/attachments/upload.ts');
    expect(upload).toEqual(expect.arrayContaining(['shared/s3/bucket.ts', 'shared/attachments/uploads.ts']));
    expect(upload).not.toContain('shared/attachments/leftovers.ts');
    expect(ownModulesOf(metafile, 'functions/authorizer.ts')).not.toContain('shared/app.ts');
    // The fan-out writes conversations only: no S3 module in its bundle.
    const fanOut = ownModulesOf(metafile, fanOutFunction.entry);
    expect(fanOut).toContain('shared/conversations/fan-out.ts');
    for (const absent of ['shared/s3/bucket.ts', 'shared/s3/presigner.ts', 'shared/files/s3-file-store.ts'])
      expect(fanOut, absent).not.toContain(absent);
    // The Event API's authorizer is the REST one's verifier and its decision, nothing of the App.
    const realtimeAuthorizer = ownModulesOf(metafile, realtimeAuthorizerFunction.entry);
    expect(realtimeAuthorizer).toContain('shared/realtime/authorization.ts');
    expect(realtimeAuthorizer).not.toContain('shared/app.ts');
    // The publisher posts hints: no store, no S3, no DynamoDB of ours.
    const publisher = ownModulesOf(metafile, realtimePublisherFunction.entry);
    expect(publisher).toContain('shared/realtime/publisher.ts');
    for (const absent of [
      'shared/s3/bucket.ts',
      'shared/s3/presigner.ts',
      'shared/conversations/dynamo-store.ts',
      'shared/events/store.ts',
    ])
      expect(publisher, absent).not.toContain(absent);
  });
});
