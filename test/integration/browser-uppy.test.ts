import type { Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';
import { download, sha256 } from '../support/attachments.js';
import { type HeadlessChromium, launchChromium, runBrowserTests } from '../support/browser.js';
import { eventually } from '../support/eventually.js';
import { MIB } from '../support/upload-sessions.js';
import type { UploadOutcome, UploadRequest } from '../support/uppy-page/protocol.js';
import { serveUppyPage } from '../support/uppy-page/serve.js';

/** Uppy in headless Chromium, uploading a generated file through the upload sessions straight to S3. */
describe.skipIf(!runBrowserTests)('Uppy (@uppy/aws-s3 multipart) in a browser', () => {
  let t: TestApi;
  let chromium: HeadlessChromium;
  let app: Awaited<ReturnType<typeof serveUppyPage>>;
  let token: string;

  beforeAll(async () => {
    app = await serveUppyPage();
    t = await startTestApi({ env: { CORS_ORIGINS: app.origin } });
    token = await t.token('uppy_user');
    chromium = await launchChromium();
  });
  afterAll(async () => {
    await chromium?.close();
    await t?.close();
    await app?.close();
  });

  async function freshPage(): Promise<Page> {
    const page = await chromium.context.newPage();
    await page.goto(`${app.origin}/`);
    return page;
  }

  const uploadIn = (page: Page, request: Omit<UploadRequest, 'api' | 'token'>) =>
    page.evaluate(
      (request) => (globalThis as unknown as { uploadWithUppy(r: UploadRequest): Promise<UploadOutcome> }).uploadWithUppy(request),
      {
        ...request,
        api: t.url,
        token,
      },
    );

  /** Part PUTs to S3 as the page sends them (presigned: ?partNumber=N&uploadId=...). */
  const isPartPut = (route: Route) => route.request().method() === 'PUT' && route.request().url().startsWith(t.api.s3Endpoint);
  const partNumberOf = (route: Route) => Number(new URL(route.request().url()).searchParams.get('partNumber'));

  it('uploads a 64 MiB file while the network drops some part requests; Uppy retries and file_url has the same bytes', {
    timeout: 180_000,
  }, async () => {
    const page = await freshPage();
    const dropped: number[] = [];
    // The first attempt of parts 2, 5 and 7 fails as a lost connection would; later attempts go through.
    await page.route('**/*', (route) => {
      if (isPartPut(route) && [2, 5, 7].includes(partNumberOf(route)) && !dropped.includes(partNumberOf(route))) {
        dropped.push(partNumberOf(route));
        return route.abort('connectionreset');
      }
      return route.continue();
    });
    const outcome = await uploadIn(page, { size: 64 * MIB + 12345, seed: 7 });
    expect(outcome.error).toBeUndefined();
    expect(dropped.sort()).toEqual([2, 5, 7]);
    expect(outcome.attachment).toMatchObject({ file_size: 64 * MIB + 12345, file_type: 'application/octet-stream' });
    const file = await download(outcome.attachment!.file_url);
    expect(file.bytes.length).toBe(64 * MIB + 12345);
    expect(sha256(file.bytes)).toBe(outcome.sha256);
    await page.close();
  });

  it('resumes in a fresh page from GET /v1/upload_sessions/:id, sending only the parts S3 lacks', { timeout: 180_000 }, async () => {
    const first = await freshPage();
    const started = await uploadIn(first, { size: 64 * MIB, seed: 11, stopAfterParts: 3 });
    await first.close();

    // A part PUT the closed page had in flight may still land: the snapshot is the one two reads in a row agree on.
    let partsBefore = -1;
    const held = await eventually(
      async () => (await t.call('uppy_user', 'GET', `/v1/upload_sessions/${started.sessionId}`)).body,
      (body) => {
        const settled = body.parts.length === partsBefore;
        partsBefore = body.parts.length;
        return settled;
      },
      5_000,
    );
    expect(held.status).toBe('pending');
    expect(held.parts.length).toBeGreaterThanOrEqual(3);

    const second = await freshPage();
    const sent: number[] = [];
    await second.route('**/*', (route) => {
      if (isPartPut(route)) sent.push(partNumberOf(route));
      return route.continue();
    });
    const resumed = await uploadIn(second, { size: 64 * MIB, seed: 11, resumeSessionId: started.sessionId });
    expect(resumed.error).toBeUndefined();
    expect(resumed.sha256).toBe(started.sha256);
    const heldNumbers = held.parts.map((part: { part_number: number }) => part.part_number);
    expect(sent.filter((number) => heldNumbers.includes(number))).toEqual([]);
    expect([...sent, ...heldNumbers].sort((a, b) => a - b)).toEqual(Array.from({ length: held.part_count }, (_, index) => index + 1));
    const file = await download(resumed.attachment!.file_url);
    expect(sha256(file.bytes)).toBe(started.sha256);
    await second.close();
  });
});
