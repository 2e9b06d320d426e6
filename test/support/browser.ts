import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

/** Debian's chromium; CHROMIUM_PATH points elsewhere. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Browser tests run where chromium is installed, and always in CI (where a
 * missing chromium fails them). Elsewhere they are reported as skipped.
 */
export const runBrowserTests = existsSync(CHROMIUM_PATH) || process.env.CI === 'true';

export interface HeadlessChromium {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<HeadlessChromium> {
  const profile = mkdtempSync(join(tmpdir(), 'chromium-profile-'));
  // A fresh profile directory per launch (playwright's way of passing --user-data-dir).
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** What a served page's paths answer: content type and body. */
export type PageFiles = Record<string, { contentType: string; body: string | Uint8Array }>;

const EMPTY_PAGE: PageFiles = { '/': { contentType: 'text/html; charset=utf-8', body: '<!doctype html><title>client</title>' } };

/** A page on its own loopback origin (empty by default), for scripts that call the API cross-origin. */
export async function servePage(files: PageFiles = EMPTY_PAGE): Promise<{ origin: string; close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    const file = files[new URL(request.url ?? '/', 'http://page').pathname] ?? files['/']!;
    response.writeHead(200, { 'content-type': file.contentType });
    response.end(file.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
