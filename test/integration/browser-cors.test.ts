import { randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';
import { CHROMIUM_PATH, type HeadlessChromium, launchChromium, runBrowserTests, servePage } from '../support/browser.js';

if (!runBrowserTests)
  console.warn(
    `Browser tests skipped: no chromium at ${CHROMIUM_PATH}; install it (apt-get install chromium) or set CHROMIUM_PATH. CI=true runs them anyway.`,
  );

/** A web app on another origin, in headless Chromium, talking to the API as a browser client would. */
describe.skipIf(!runBrowserTests)('a browser page on another origin', () => {
  let t: TestApi;
  let chromium: HeadlessChromium;
  let app: Awaited<ReturnType<typeof servePage>>;
  let stranger: Awaited<ReturnType<typeof servePage>>;
  let token: string;

  beforeAll(async () => {
    [app, stranger] = await Promise.all([servePage(), servePage()]);
    t = await startTestApi({ env: { CORS_ORIGINS: app.origin } });
    token = await t.token('browser_user', { groups: ['team'] });
    chromium = await launchChromium();
  });
  afterAll(async () => {
    await chromium?.close();
    await t?.close();
    await app?.close();
    await stranger?.close();
  });

  async function pageOn(origin: string): Promise<Page> {
    const page = await chromium.context.newPage();
    await page.goto(`${origin}/`);
    return page;
  }

  const createConversation = (page: Page) =>
    page.evaluate(
      async ({ api, token }) => {
        try {
          const response = await fetch(`${api}/v1/conversations`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': 'browser-1' },
            body: JSON.stringify({ contact_id: 'alice' }),
          });
          return { status: response.status, body: await response.json(), requestId: response.headers.get('x-request-id') };
        } catch (error) {
          return { blocked: String(error) };
        }
      },
      { api: t.url, token },
    );

  it('creates a conversation with fetch (preflighted: JSON, Authorization, Idempotency-Key) and reads x-request-id', async () => {
    const page = await pageOn(app.origin);
    const result = await createConversation(page);
    expect(result).toMatchObject({ status: 201, body: { contact_id: 'alice' }, requestId: expect.any(String) });
    await page.close();
  });

  it('uploads a file with fetch and FormData into a conversation, and downloads the same bytes through file_url', async () => {
    const page = await pageOn(app.origin);
    const bytes = Array.from(randomBytes(3000));
    const result = await page.evaluate(
      async ({ api, token, bytes }) => {
        const authorization = `Bearer ${token}`;
        const conversation = (await (
          await fetch(`${api}/v1/conversations`, {
            method: 'POST',
            headers: { authorization },
            body: new URLSearchParams({ group_id: 'team' }),
          })
        ).json()) as { id: string };
        const form = new FormData();
        form.append('conversation_id', conversation.id);
        form.append('file', new Blob([new Uint8Array(bytes)], { type: 'image/png' }), 'café photo.png');
        const uploaded = await fetch(`${api}/v1/attachments`, {
          method: 'POST',
          headers: { authorization, 'idempotency-key': 'upload-1' },
          body: form,
        });
        const attachment = (await uploaded.json()) as { file_url: string };
        const file = await fetch(attachment.file_url);
        return {
          conversationId: conversation.id,
          status: uploaded.status,
          attachment,
          download: {
            status: file.status,
            bytes: Array.from(new Uint8Array(await file.arrayBuffer())),
            type: file.headers.get('content-type'),
            disposition: file.headers.get('content-disposition'),
          },
        };
      },
      { api: t.url, token, bytes },
    );
    expect(result.status).toBe(201);
    expect(result.attachment).toMatchObject({
      conversation_id: result.conversationId,
      filename: 'café photo.png',
      file_type: 'image/png',
      file_size: 3000,
    });
    expect(result.download.status).toBe(200);
    expect(result.download.bytes).toEqual(bytes);
    expect(result.download.type).toBe('image/png');
    expect(result.download.disposition).toContain("filename*=UTF-8''caf%C3%A9%20photo.png");
    await page.close();
  });

  it('reads an error body and its request id too', async () => {
    const page = await pageOn(app.origin);
    const result = await page.evaluate(
      async ({ api, token }) => {
        const response = await fetch(`${api}/v1/conversations?limit=0`, { headers: { authorization: `Bearer ${token}` } });
        return { status: response.status, body: await response.json(), requestId: response.headers.get('x-request-id') };
      },
      { api: t.url, token },
    );
    expect(result).toMatchObject({ status: 400, body: { error: { code: 'parameter_invalid' } }, requestId: expect.any(String) });
    await page.close();
  });

  it('is blocked by the browser on an origin that is not allowed', async () => {
    const page = await pageOn(stranger.origin);
    expect(await createConversation(page)).toEqual({ blocked: expect.stringContaining('Failed to fetch') });
    await page.close();
  });
});
