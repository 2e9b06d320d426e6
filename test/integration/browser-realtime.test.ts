import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';
import { feedOf } from '../support/audit.js';
import { CHROMIUM_PATH, type HeadlessChromium, launchChromium, runBrowserTests, servePage } from '../support/browser.js';

if (!runBrowserTests)
  console.warn(
    `Browser tests skipped: no chromium at ${CHROMIUM_PATH}; install it (apt-get install chromium) or set CHROMIUM_PATH. CI=true runs them anyway.`,
  );

/**
 * The live inbox from a web app: headless Chromium's own WebSocket, with
 * nothing but what the browser has (btoa for the header subprotocol),
 * connects where GET /v1/realtime says, subscribes, hears the hint of a
 * change made elsewhere and reads the event it names from the feed.
 */
describe.skipIf(!runBrowserTests)('a browser client of the live inbox', () => {
  let t: TestApi;
  let chromium: HeadlessChromium;
  let app: Awaited<ReturnType<typeof servePage>>;

  beforeAll(async () => {
    app = await servePage();
    t = await startTestApi({ env: { CORS_ORIGINS: app.origin } });
    chromium = await launchChromium();
  });
  afterAll(async () => {
    await chromium?.close();
    await t?.close();
    await app?.close();
  });

  it('connects with the browser WebSocket, subscribes, hears a hint for a change made elsewhere, and reads that event from the feed', async () => {
    const user = `browser-${Date.now()}`;
    const token = await t.token(user);
    const page: Page = await chromium.context.newPage();
    await page.goto(`${app.origin}/`);
    const subscribed = await page.evaluate(
      async ({ api, token }) => {
        const authorization = `Bearer ${token}`;
        const endpoint = (await (await fetch(`${api}/v1/realtime`, { headers: { authorization } })).json()) as {
          url: string;
          host: string;
          channel: string;
        };
        const headers = { host: endpoint.host, Authorization: authorization };
        const header = btoa(JSON.stringify(headers)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
        const socket = new WebSocket(endpoint.url, ['aws-appsync-event-ws', `header-${header}`]);
        const state = { protocol: '', received: [] as { type: string; id?: string; event?: string }[], hints: [] as unknown[] };
        (globalThis as unknown as { live: typeof state }).live = state;
        return new Promise<{ protocol: string; acked: boolean; channel: string }>((resolve, reject) => {
          socket.onerror = () => reject(new Error('WebSocket failed'));
          socket.onopen = () => {
            state.protocol = socket.protocol;
            socket.send(JSON.stringify({ type: 'connection_init' }));
          };
          socket.onmessage = (message) => {
            const data = JSON.parse(message.data as string) as { type: string; id?: string; event?: string };
            state.received.push(data);
            if (data.type === 'connection_ack')
              socket.send(JSON.stringify({ type: 'subscribe', id: 'inbox-1', channel: endpoint.channel, authorization: headers }));
            if (data.type === 'subscribe_success')
              resolve({
                protocol: state.protocol,
                acked: state.received.some((m) => m.type === 'connection_ack'),
                channel: endpoint.channel,
              });
            if (data.type === 'subscribe_error' || data.type === 'connection_error') reject(new Error(JSON.stringify(data)));
            if (data.type === 'data' && data.event) state.hints.push(JSON.parse(data.event));
          };
        });
      },
      { api: t.url, token },
    );
    expect(subscribed).toMatchObject({ protocol: 'aws-appsync-event-ws', acked: true, channel: expect.stringMatching(/^\/inbox\//) });

    const created = await t.call(user, 'POST', '/v1/conversations', { form: { contact_id: 'alice' } });
    expect(created.status).toBe(201);
    await page.waitForFunction(() => (globalThis as unknown as { live: { hints: unknown[] } }).live.hints.length >= 1, undefined, {
      timeout: 20_000,
    });
    const hints = await page.evaluate(() => (globalThis as unknown as { live: { hints: unknown[] } }).live.hints);
    const [event] = await feedOf(t, user);
    expect(hints).toEqual([{ type: 'feed', event_id: event!.id, event_type: 'conversation.created' }]);
    await page.close();
  });
});
