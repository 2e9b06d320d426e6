import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPOSITORY_ROOT } from '../../infra/declarations/repository.js';
import { readLocalSettings } from '../../infra/local/server-settings.js';
import { bundleLayout } from '../../infra/stack/bundling.js';
import { readConfig } from '../../shared/config.js';
import { REALTIME_PATH } from '../../shared/realtime/channel.js';
import { realtimeEndpoint } from '../../shared/realtime/endpoint.js';
import { routes } from '../../shared/routes.js';
import type { Json } from '../support/api.js';
import { previewAssetTests } from './previews.js';
import { CAN_BUNDLE_OFFLINE, resourcesOf, type Synthesized, synthesize } from './synth.js';

// What `sam local start-api -t cdk.out/<Stack>.template.json` needs of each
// function: the asset directory (from CDK's asset metadata) and a handler that
// names a module file in it, which Node loads as ESM and which exports it.
let synthesized: Synthesized;
// Bundles every function (12 esbuild runs): minutes, not seconds, on a busy 2-core machine.
beforeAll(() => {
  if (CAN_BUNDLE_OFFLINE) synthesized = synthesize({}, { bundle: true });
}, 240_000);
afterAll(() => synthesized?.remove());

const functions = () => Object.entries(resourcesOf(synthesized.template, 'AWS::Lambda::Function'));

describe.runIf(CAN_BUNDLE_OFFLINE)('what sam local reads from the synthesized template', () => {
  it('finds every function bundle in its own asset directory inside the cloud assembly', () => {
    const directories = functions().map(([id, { Metadata }]) => {
      expect(Metadata?.['aws:asset:property'], id).toBe('Code');
      const path = Metadata?.['aws:asset:path'];
      expect(typeof path, id).toBe('string');
      const directory = resolve(synthesized.outdir, path);
      expect(relative(synthesized.outdir, directory).startsWith('..'), id).toBe(false);
      expect(statSync(directory).isDirectory(), id).toBe(true);
      return directory;
    });
    expect(new Set(directories).size).toBe(directories.length);
  });

  it('resolves every handler to an ES module file in that directory that exports it, with its source map', () => {
    const handlers = functions().map(([id, { Properties, Metadata }]) => {
      const directory = resolve(synthesized.outdir, Metadata!['aws:asset:path']);
      const [moduleName, exportName] = Properties.Handler.split('.');
      expect(`${moduleName}.js`, id).toBe(bundleLayout.file);
      const file = join(directory, bundleLayout.file);
      expect(existsSync(file), id).toBe(true);
      expect(JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')), id).toMatchObject(bundleLayout.packageJson);
      const sourceMap = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(file, 'utf8'))?.[1];
      expect(sourceMap && existsSync(join(directory, sourceMap)), id).toBe(true);
      return { file, exportName: exportName! };
    });
    expect(exportedTypes(handlers)).toEqual(handlers.map(() => 'function'));
  });
});

describe.runIf(CAN_BUNDLE_OFFLINE)('the preview worker’s asset', () => previewAssetTests(() => synthesized));

describe.runIf(CAN_BUNDLE_OFFLINE)('infra/stack/sam-env.json', () => {
  const samEnv = JSON.parse(readFileSync(join(REPOSITORY_ROOT, 'infra/stack/sam-env.json'), 'utf8')) as {
    Parameters: Record<string, string>;
  };
  const declared = (name: string) => functions().filter(([, { Properties }]) => name in Properties.Environment.Variables);

  it('only sets variables the functions declare (sam local ignores the others)', () => {
    for (const name of Object.keys(samEnv.Parameters)) expect(declared(name).length, name).toBeGreaterThan(0);
    // Every route's function and the consumers, cleanup, fan-out, preview worker, scan recorder, scan timeout and settling (which `sam local invoke` can run on npm start's data too).
    expect(declared('DYNAMODB_ENDPOINT')).toHaveLength(routes.length + 6);
    expect(declared('S3_ENDPOINT')).toHaveLength(routes.length + 6);
    // The REST authorizer and the Event API's, which verify the same tokens.
    expect(declared('AUTH_SECRET')).toHaveLength(2);
  });

  it("names the tables and bucket that npm start creates, on the host as seen from sam's containers", () => {
    const local = readConfig({});
    expect(samEnv.Parameters).toMatchObject({
      CONVERSATIONS_TABLE: local.conversationsTable,
      ATTACHMENTS_TABLE: local.attachmentsTable,
      IDEMPOTENCY_TABLE: local.idempotencyTable,
      UPLOAD_SESSIONS_TABLE: local.uploadSessionsTable,
      EVENTS_TABLE: local.eventsTable,
      FILES_BUCKET: local.filesBucket,
    });
    expect(samEnv.Parameters.DYNAMODB_ENDPOINT).toMatch(/^http:\/\/host\.docker\.internal:\d+$/);
    expect(samEnv.Parameters.S3_ENDPOINT).toMatch(/^http:\/\/host\.docker\.internal:\d+$/);
  });

  // SAM cannot resolve the Event API's attributes (Fn::GetAtt of an AppSync Api) and blanks them: without
  // sam-env.json's values GET /v1/realtime answered 500. Its clients are on the host, so npm start's own endpoint.
  it("gives the functions told the Event API npm start's real-time endpoint, as the host reaches it", () => {
    const told = declared('REALTIME_URL');
    expect(told.length).toBeGreaterThan(0);
    const { port } = readLocalSettings({});
    for (const [id, { Properties }] of told) {
      const endpoint = realtimeEndpoint(readConfig(samEnvironment(Properties.Environment.Variables, samEnv.Parameters)), 'user_1', []);
      expect({ url: endpoint.url, host: endpoint.host }, id).toEqual({
        url: `ws://127.0.0.1:${port}${REALTIME_PATH}`,
        host: `127.0.0.1:${port}`,
      });
    }
  });
});

/**
 * The environment `sam local` runs a function with: the template's variables, a value SAM cannot resolve
 * (an intrinsic function other than a parameter's Ref) blanked, then --env-vars' global `Parameters` over the
 * variables the function declares (samcli/local/lambdafn/env_vars.py).
 */
function samEnvironment(declared: Record<string, Json>, overrides: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(declared).map(([name, value]) => [name, overrides[name] ?? (typeof value === 'string' ? value : '')]),
  );
}

/** Loads the bundles in plain Node, as the Lambda runtime does (not through the test runner's transform). */
function exportedTypes(handlers: { file: string; exportName: string }[]): string[] {
  const script = `
    const types = [];
    for (const { url, exportName } of ${JSON.stringify(handlers.map(({ file, exportName }) => ({ url: pathToFileURL(file).href, exportName })))}) {
      types.push(typeof (await import(url))[exportName]);
    }
    process.stdout.write(JSON.stringify(types));`;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '--eval', script], { encoding: 'utf8' }));
}
