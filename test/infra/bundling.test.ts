import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { build, type ImportKind, type Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundledFunctions } from '../../bench/bundles.js';
import {
  fanOutFunction,
  previewFunction,
  realtimeAuthorizerFunction,
  realtimePublisherFunction,
  stackFunctions,
} from '../../infra/declarations/function-settings.js';
import { REPOSITORY_ROOT } from '../../infra/declarations/repository.js';
import { bundleSettings, esbuildOptions, installSharp, NATIVE_MODULES, sharpLockfile } from '../../infra/stack/bundling.js';

/** Every function the stack deploys (infra/declarations/function-settings.ts). */
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

/**
 * Over their budget, each with what it carries that the others do not, and the most it may weigh (minified
 * bytes) until that is cut: it may not grow meanwhile, and once under the budget it leaves this list. Kept over
 * because what they carry costs their cold start a few ms of ~150-220 (docs/decisions.md, "Bundles over the budget").
 */
const OVER_BUDGET: Readonly<Record<string, { ceiling: number; why: string }>> = {
  // Their bases, S3 calls included, are 280 KB (GetAttachment) and 275 KB (GetUploadSession): 20-25 KB short of the budget.
  'functions/attachments/upload.ts': {
    ceiling: 334_200,
    why: "busboy (23.4 KB with streamsearch; 2-3 ms of its load), mime's table compressed (10 KB: file_type from any mime-db extension, as the contract says), the preview sniff (2.6 KB) and who may download what scanning holds (0.7 KB)",
  },
  'functions/upload-sessions/complete.ts': {
    // 374,000 until the settling timers' queue URL joined the configuration every function reads (+57 bytes).
    ceiling: 374_300,
    why: 'file-type with its tokenizers (71 KB: ~150 formats by their bytes; 4-10 ms of its load), the completing transaction with the attachment and activity writes (~12 KB), the preview sniff (2.5 KB) and who may download what scanning holds (0.7 KB)',
  },
};

/** Each function's bundle, minified, in bytes. */
function sizesOf(metafile: Metafile): Map<string, number> {
  return new Map(
    Object.values(metafile.outputs)
      .filter((output) => output.entryPoint)
      .map((output) => [relative(REPOSITORY_ROOT, join(REPOSITORY_ROOT, output.entryPoint!)), output.bytes]),
  );
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

  // A bundle's size is its cold start's first cost (docs/performance.md, "Bundles"): measured, not guessed.
  it('weigh at most their budget, 300 KB minified (the authorizers 100 KB), and the listed ones no more than their ceiling', () => {
    const sizes = sizesOf(metafile);
    const over = bundledFunctions()
      .filter(({ entry }) => ENTRIES.includes(entry))
      .filter(({ entry, limitBytes }) => sizes.get(entry)! > limitBytes)
      .map(({ entry }) => entry);
    expect(over.sort()).toEqual(Object.keys(OVER_BUDGET).sort());
    for (const [entry, { ceiling }] of Object.entries(OVER_BUDGET)) expect(sizes.get(entry), entry).toBeLessThanOrEqual(ceiling);
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
    // Only start and complete ask the conversations (and complete the attachments) of a session.
    for (const entry of [
      'functions/upload-sessions/get.ts',
      'functions/upload-sessions/sign-parts.ts',
      'functions/upload-sessions/abort.ts',
    ])
      for (const absent of ['shared/conversations/reads.ts', 'shared/attachments/service.ts'])
        expect(ownModulesOf(metafile, entry), `${entry}: ${absent}`).not.toContain(absent);
    // Only complete bundles the completing transaction: the attachment's writes, the conversation's activity.
    for (const entry of [
      'functions/upload-sessions/start.ts',
      'functions/upload-sessions/get.ts',
      'functions/upload-sessions/sign-parts.ts',
      'functions/upload-sessions/abort.ts',
    ])
      expect(ownModulesOf(metafile, entry), entry).not.toContain('shared/conversations/activity.ts');
    expect(ownModulesOf(metafile, 'functions/upload-sessions/complete.ts')).toContain('shared/conversations/activity.ts');
    // What attachments and sessions ask of the conversations is two reads (ConversationReads), not the store and its lists.
    for (const entry of ENTRIES.filter((entry) => /^functions\/(attachments|upload-sessions)\//.test(entry)))
      for (const absent of ['shared/conversations/service.ts', 'shared/conversations/list-plan.ts'])
        expect(ownModulesOf(metafile, entry), `${entry}: ${absent}`).not.toContain(absent);
    // The fan-out writes conversations only: no S3 module in its bundle.
    const fanOut = ownModulesOf(metafile, fanOutFunction.entry);
    expect(fanOut).toContain('shared/conversations/fan-out.ts');
    for (const absent of ['shared/s3/bucket.ts', 'shared/s3/presigner.ts', 'shared/files/s3-file-store.ts'])
      expect(fanOut, absent).not.toContain(absent);
    // The Event API's authorizer is the REST one's verifier and its decision, nothing of the Composition.
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

// The bundled synth (sam.test.ts) installs for this machine from its npm cache; what deploys is Lambda's arm64.
describe("the preview worker's sharp", () => {
  const lock = JSON.parse(readFileSync(join(REPOSITORY_ROOT, 'package-lock.json'), 'utf8'));

  it('is installed for Linux arm64 with glibc by npm ci from the lockfile, which may download only when not offline, then checked present', () => {
    const [write, install, check] = installSharp('/asset', { architecture: 'arm64', offline: false });
    expect(write).toMatch(/^node -e ".*" "\/asset"$/);
    expect(install).toBe('npm ci --prefix "/asset" --omit=dev --no-audit --no-fund --loglevel=warn --os=linux --cpu=arm64 --libc=glibc');
    expect(check).toContain(join('/asset', 'node_modules', '@img', 'sharp-linux-arm64', 'package.json'));
    expect(installSharp('/asset', { architecture: 'x86_64', offline: true })[1]).toMatch(/--cpu=x64 --libc=glibc --offline$/);
  });

  it("pins sharp and every platform's binary at the lockfile's versions and integrity, and nothing else", () => {
    const { packageJson, lockfile } = sharpLockfile(lock) as {
      packageJson: { type: string; dependencies: Record<string, string> };
      lockfile: { packages: Record<string, { version: string; integrity: string }> };
    };
    const sharp = lock.packages['node_modules/sharp'];
    expect(packageJson).toEqual({ type: 'module', dependencies: { sharp: sharp.version } });
    const { '': root, ...installed } = lockfile.packages;
    expect(root).toEqual({ dependencies: { sharp: sharp.version } });
    for (const [path, entry] of Object.entries(installed)) expect(entry, path).toEqual(lock.packages[path]);
    const names = Object.keys(installed).map((path) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
    expect(names).toEqual(
      expect.arrayContaining(['sharp', ...Object.keys(sharp.dependencies), ...Object.keys(sharp.optionalDependencies)]),
    );
    expect(names).toEqual(expect.arrayContaining(['@img/sharp-linux-arm64', '@img/sharp-libvips-linux-arm64']));
    // sharp's own closure only: no package of the repository's other dependencies.
    expect(names).not.toContain('esbuild');
  });
});
