import { Amplify } from 'aws-amplify';
import { events } from 'aws-amplify/data';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { signToken } from '../../shared/auth/tokens.js';
import { eventually } from '../support/eventually.js';
import { freshId, type Member, sharingApi } from '../support/sharing.js';

/**
 * AWS Amplify's own AppSync Events client (`events.connect`), unchanged,
 * against the local server's Event API, as a new user would try it
 * (docs/api.md, "The live inbox"): pointed at `ws://<host>/event` (an
 * `http://` endpoint it turns into `wss://`), with the API's bearer token
 * as its Lambda authorization. Node 20 has no WebSocket global, which
 * Amplify needs: the `ws` package stands in for the run of this file.
 */
const s = sharingApi();
const hadWebSocket = 'WebSocket' in globalThis;

beforeAll(() => {
  if (!hadWebSocket) Object.assign(globalThis, { WebSocket });
});
afterAll(() => {
  if (!hadWebSocket) Reflect.deleteProperty(globalThis, 'WebSocket');
});

async function endpointOf(who: Member): Promise<{ url: string; host: string; channel: string }> {
  const response = await s.call(who, 'GET', '/v1/realtime');
  expect(response.status, response.text).toBe(200);
  return response.body;
}

/** Amplify configured as its docs say, on the local Event API: `ws://` keeps the client off TLS. */
function configureAmplify(host: string): void {
  Amplify.configure({ API: { Events: { endpoint: `ws://${host}/event`, region: 'us-east-1', defaultAuthMode: 'lambda' } } });
}

// First: Amplify keeps one socket for every channel, and would answer a later connect on the one already open.
it("refuses a forged token with the authorizer's UnauthorizedException, which Amplify does not retry", async () => {
  const { host, channel } = await endpointOf({ id: freshId('a') });
  configureAmplify(host);
  const authToken = `Bearer ${await signToken('not-the-secret', 'someone')}`;
  const refusal = await events.connect(channel, { authMode: 'lambda', authToken }).catch((error: unknown) => error);
  expect(refusal).toBeInstanceOf(Error);
  expect((refusal as Error).message).toBe('UnauthorizedException');
});

it("connects, subscribes to the user's channel and hears a hint per event of the feed; another user's channel and a publish are refused", async () => {
  const [a, b] = [{ id: freshId('a') }, { id: freshId('b') }];
  const { host, channel } = await endpointOf(a);
  configureAmplify(host);
  const authToken = `Bearer ${await s.t().token(a.id)}`;
  const inbox = await events.connect(channel, { authMode: 'lambda', authToken });
  const hints: unknown[] = [];
  const subscription = inbox.subscribe(
    { next: (data: { event: unknown }) => hints.push(data.event), error: () => {} },
    { authMode: 'lambda', authToken },
  );
  await subscription.ready;

  const side = (await s.openSide(a, { contact_id: freshId('c') })).body;
  expect((await s.call(a, 'PUT', `/v1/conversations/${side.id}`, { json: { is_pinned: true } })).status).toBe(200);
  const feed = await s.feedOf(a, 2);
  await eventually(
    async () => hints,
    (heard) => heard.length >= 2,
  );
  expect(hints).toEqual(feed.map((event: { id: string; type: string }) => ({ type: 'feed', event_id: event.id, event_type: event.type })));

  const others = await events.connect((await endpointOf(b)).channel, { authMode: 'lambda', authToken });
  const refusedSubscription = others.subscribe({ next: () => {}, error: () => {} }, { authMode: 'lambda', authToken });
  await expect(refusedSubscription.ready).rejects.toBeDefined();
  await expect(inbox.publish({ type: 'forged' }, { authMode: 'lambda', authToken })).rejects.toBeDefined();
  expect(hints).toHaveLength(2);
  await Promise.all([others.close(), inbox.close()]);
});
