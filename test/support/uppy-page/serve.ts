import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { servePage } from '../browser.js';

/**
 * The Uppy page, bundled by esbuild from page.ts (Uppy from node_modules, no
 * CDN), served on its own loopback origin.
 */
export async function serveUppyPage(): Promise<{ origin: string; close(): Promise<void> }> {
  const bundle = await build({
    entryPoints: [fileURLToPath(new URL('./page.ts', import.meta.url))],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'chrome120',
    write: false,
    logLevel: 'silent',
  });
  return servePage({
    '/': { contentType: 'text/html; charset=utf-8', body: '<!doctype html><title>uppy</title><script src="/page.js"></script>' },
    '/page.js': { contentType: 'text/javascript; charset=utf-8', body: bundle.outputFiles[0]!.contents },
  });
}
