import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { functionKeyId, REALTIME_PUBLISHER_FUNCTION } from '../../infra/local/iam.js';
import { headerSubprotocol, RealtimeClient, RealtimeRefused } from '../../infra/local/realtime-client.js';
import { signToken } from '../../shared/auth/tokens.js';
import { EventApiPublisher } from '../../shared/realtime/publisher.js';
import { eventually } from '../support/eventually.js';
import { freshId, type Member, sharingApi } from '../support/sharing.js';

/**
 * The live inbox over the local server (docs/api.md, "The live inbox"): a
 * client written from AWS's description of AppSync Events' WebSocket
 * protocol connects where GET /v1/realtime says, subscribes to its own
 * channel and hears a hint for every event that reaches its feed, and
 * nothing else; the refusals AppSync answers; the reconnect recipe.
 */
const s = sharingApi();
const file = () => ({ bytes: randomBytes(32), filename: 'notes.txt', type: 'text/plain' });

interface Endpoint {
  url: string;
  host: string;
  channel: string;
}

async function endpointOf(who: Member): Promise<Endpoint> {
  const response = await s.call(who, 'GET', '/v1/realtime');
  expect(response.status, response.text).toBe(200);
  return response.body;
}

/** `who` connected and subscribed to their own channel, collecting the hints. */
async function listening(who: Member) {
  const endpoint = await endpointOf(who);
  const client = await RealtimeClient.connect({ url: endpoint.url, host: endpoint.host, token: await s.t().token(who.id) });
  const hints: Record<string, unknown>[] = [];
  await client.subscribe(endpoint.channel, (event) => hints.push(event as Record<string, unknown>));
  return { client, hints, endpoint };
}

/** A change of `who`'s side that must succeed: one conversation.updated in their feed. */
async function pin(who: Member, conversationId: string, pinned: boolean) {
  const response = await s.call(who, 'PUT', `/v1/conversations/${conversationId}`, { json: { is_pinned: pinned } });
  expect(response.status, response.text).toBe(200);
}

const hintsOf = (events: { id: string; type: string }[]) =>
  events.map((event) => ({ type: 'feed', event_id: event.id, event_type: event.type }));

describe('GET /v1/realtime', () => {
  it('answers the local endpoint and an opaque channel of letters, digits and dashes, one per user', async () => {
    const [a, b] = [{ id: freshId('a') }, { id: 'ü/ser with spaces' }];
    const [ea, eb] = [await endpointOf(a), await endpointOf(b)];
    expect(ea.url).toBe(`ws://${new URL(s.t().url).host}/event/realtime`);
    expect(ea.host).toBe(new URL(s.t().url).host);
    expect(ea.channel).toMatch(/^\/inbox\/[A-Za-z0-9-]{1,50}$/);
    expect(eb.channel).toMatch(/^\/inbox\/[A-Za-z0-9-]{1,50}$/);
    expect(ea.channel).not.toBe(eb.channel);
    expect(await endpointOf(a)).toEqual(ea);
    expect(ea.channel).not.toContain(a.id);
  });

  it('needs a token like every route', async () => {
    const response = await s.t().call(null, 'GET', '/v1/realtime');
    expect(response.status).toBe(401);
  });
});

describe('pushes', () => {
  it('a subscriber hears one hint per event of its own changes, with the event id and type only, in feed order', async () => {
    const a = { id: freshId('a') };
    const { client, hints } = await listening(a);
    const side = (await s.openSide(a, { contact_id: freshId('c') })).body;
    await pin(a, side.id, true);
    const feed = await s.feedOf(a, 2);
    expect(feed).toHaveLength(2);
    await eventually(
      async () => hints,
      (heard) => heard.length >= 2,
    );
    expect(hints).toEqual(hintsOf(feed));
    for (const hint of hints) expect(Object.keys(hint).sort()).toEqual(['event_id', 'event_type', 'type']);
    await client.close();
  });

  it("a contact hears another member's upload to them: the side it made and the attachment, and the uploader's hints go to the uploader only", async () => {
    const [a, b] = [{ id: freshId('a') }, { id: freshId('b') }];
    const listenerA = await listening(a);
    const listenerB = await listening(b);
    const sideA = (await s.openSide(a, { contact_id: b.id })).body;
    await s.upload(a, sideA.id, file());
    const feedB = await s.feedOf(b, 2);
    const feedA = await s.feedOf(a, 3);
    await eventually(
      async () => [listenerA.hints, listenerB.hints],
      ([heardA, heardB]) => heardA!.length >= 3 && heardB!.length >= 2,
    );
    expect(listenerB.hints).toEqual(hintsOf(feedB));
    expect(listenerB.hints.map((hint) => hint.event_type)).toEqual(['conversation.created', 'attachment.created']);
    expect(listenerA.hints).toEqual(hintsOf(feedA));
    await Promise.all([listenerA.client.close(), listenerB.client.close()]);
  });

  it('survives a reconnect without losing anything: subscribe, wait for subscribe_success, then read the feed after the last id seen', async () => {
    const a = { id: freshId('a') };
    const first = await listening(a);
    const side = (await s.openSide(a, { contact_id: freshId('c') })).body;
    await eventually(
      async () => first.hints,
      (heard) => heard.length >= 1,
    );
    const lastSeen = first.hints.at(-1)!.event_id as string;
    await first.client.close();

    // While disconnected: changes whose hints nobody hears.
    await pin(a, side.id, true);
    await pin(a, side.id, false);

    const second = await listening(a);
    // A change racing the catch-up: heard as a hint, or found in the feed, or both.
    await pin(a, side.id, true);
    const caughtUp = await s.call(a, 'GET', `/v1/events?ending_before=${lastSeen}&limit=100`);
    expect(caughtUp.status).toBe(200);
    const feed = await s.feedOf(a, 4);
    expect(feed).toHaveLength(4);
    await eventually(
      async () => second.hints,
      (heard) => heard.length >= 1,
    );
    const known = new Set([
      lastSeen,
      ...caughtUp.body.data.map((event: { id: string }) => event.id),
      ...second.hints.map((hint) => hint.event_id),
    ]);
    expect(feed.filter((event) => !known.has(event.id))).toEqual([]);
    await second.client.close();
  });
});

describe('refusals', () => {
  it("another user's channel is subscribe_error UnauthorizedException, and nothing of theirs arrives", async () => {
    const [a, b] = [{ id: freshId('a') }, { id: freshId('b') }];
    const mine = await listening(a);
    const theirs = await endpointOf(b);
    const refusal = await mine.client.subscribe(theirs.channel).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(RealtimeRefused);
    expect((refusal as RealtimeRefused).reply).toMatchObject({ type: 'subscribe_error', errors: [{ errorType: 'UnauthorizedException' }] });
    const wildcard = await mine.client.subscribe('/inbox/*').catch((error: unknown) => error);
    expect((wildcard as RealtimeRefused).reply).toMatchObject({
      type: 'subscribe_error',
      errors: [{ errorType: 'UnauthorizedException' }],
    });
    await s.openSide(b, { contact_id: freshId('c') });
    await s.feedOf(b, 1);
    await s.openSide(a, { contact_id: freshId('c') });
    await eventually(
      async () => mine.hints,
      (heard) => heard.length >= 1,
    );
    expect(mine.hints.map((hint) => hint.event_type)).toEqual(['conversation.created']);
    expect(mine.client.received.filter((message) => message.type === 'data')).toHaveLength(1);
    await mine.client.close();
  });

  it.each([
    ['forged', async () => signToken('not-the-secret', 'someone')],
    ['expired', async () => signToken(s.t().api.authSecret, 'someone', { ttlSeconds: -60 })],
    ['not a JWT', async () => 'abc'],
  ])('a %s token is connection_error UnauthorizedException and the connection closes', async (_name, token) => {
    const { url, host } = await endpointOf({ id: freshId('a') });
    const refusal = await RealtimeClient.connect({ url, host, token: await token() }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(RealtimeRefused);
    expect((refusal as RealtimeRefused).reply).toMatchObject({
      type: 'connection_error',
      errors: [{ errorType: 'UnauthorizedException' }],
    });
  });

  it('a refused token is answered on connection_init, not before: a client that listens from its open handler on hears connection_error, then the close', async () => {
    const { url, host } = await endpointOf({ id: freshId('a') });
    const forged = await signToken('not-the-secret', 'someone');
    const socket = new WebSocket(url, ['aws-appsync-event-ws', headerSubprotocol({ host, Authorization: `Bearer ${forged}` })]);
    const heard: { type: string; errors?: unknown }[] = [];
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    socket.on('message', (data) => heard.push(JSON.parse(data.toString())));
    // Amplify's client sends connection_init from its open handler; later still, the server has long had the authorizer's answer.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const beforeInit = [...heard];
    socket.send(JSON.stringify({ type: 'connection_init' }));
    expect(await closed).toBe(1008);
    expect(beforeInit).toEqual([]);
    expect(heard).toMatchObject([{ type: 'connection_error', errors: [{ errorType: 'UnauthorizedException' }] }]);
  });

  it('an expired token on a subscribe is subscribe_error, on a connection opened with a valid one', async () => {
    const a = { id: freshId('a') };
    const { url, host, channel } = await endpointOf(a);
    const client = await RealtimeClient.connect({ url, host, token: await s.t().token(a.id) });
    const expired = await signToken(s.t().api.authSecret, a.id, { ttlSeconds: -60 });
    const refusal = await client.subscribe(channel, () => {}, { token: expired }).catch((error: unknown) => error);
    expect((refusal as RealtimeRefused).reply).toMatchObject({ type: 'subscribe_error', errors: [{ errorType: 'UnauthorizedException' }] });
    await client.close();
  });

  it('a handshake without the aws-appsync-event-ws subprotocol is refused', async () => {
    const { url, host } = await endpointOf({ id: freshId('a') });
    const socket = new WebSocket(url, [headerSubprotocol({ host, Authorization: `Bearer ${await s.t().token('x')}` })]);
    const outcome = await new Promise<string>((resolve) => {
      socket.once('open', () => resolve('open'));
      socket.once('unexpected-response', (_request, response) => resolve(`http ${response.statusCode}`));
      socket.once('error', (error) => resolve(`error ${error.message}`));
    });
    expect(outcome).toBe('http 400');
    const elsewhere = new WebSocket(url.replace('/event/realtime', '/v1/events'), ['aws-appsync-event-ws']);
    const answered = await new Promise<string>((resolve) => {
      elsewhere.once('open', () => resolve('open'));
      elsewhere.once('unexpected-response', (_request, response) => resolve(`http ${response.statusCode}`));
      elsewhere.once('error', (error) => resolve(`error ${error.message}`));
    });
    expect(answered).toBe('http 404');
  });

  it("publishing over HTTP takes only a SigV4 signature by a key whose role holds appsync:EventPublish, the publisher's; another role's is refused with a 403", async () => {
    const a = { id: freshId('a') };
    const { client, hints, endpoint } = await listening(a);
    const { config } = s.t().api;
    const base = config.credentials!;
    const signedBy = (accessKeyId: string, secretAccessKey = base.secretAccessKey) =>
      new EventApiPublisher({ url: endpoint.url, host: endpoint.host }, config.region, { accessKeyId, secretAccessKey });
    await expect(signedBy(functionKeyId(base, 'ListEvents')).publish(endpoint.channel, ['{"type":"forged"}'])).rejects.toThrow(
      /answered 403.*appsync:EventPublish/,
    );
    await expect(
      signedBy(functionKeyId(base, REALTIME_PUBLISHER_FUNCTION), 'not-the-secret').publish(endpoint.channel, ['{"type":"forged"}']),
    ).rejects.toThrow(/answered 401.*signature/);
    await expect(signedBy(functionKeyId(base, REALTIME_PUBLISHER_FUNCTION)).publish('/elsewhere/x', ['{"type":"x"}'])).rejects.toThrow(
      /answered 404/,
    );
    await expect(signedBy(functionKeyId(base, REALTIME_PUBLISHER_FUNCTION)).publish(endpoint.channel, ['not json'])).rejects.toThrow(
      /answered 400/,
    );
    await signedBy(functionKeyId(base, REALTIME_PUBLISHER_FUNCTION)).publish(endpoint.channel, ['{"type":"probe"}']);
    await eventually(
      async () => hints,
      (heard) => heard.length >= 1,
    );
    expect(hints).toEqual([{ type: 'probe' }]);
    await client.close();
  });

  it('a client may not publish: over the WebSocket publish_error with code 403, over HTTP without an IAM signature 401', async () => {
    const a = { id: freshId('a') };
    const { client, hints, endpoint } = await listening(a);
    const reply = client.next((message) => message.id === 'p1');
    client.send({
      type: 'publish',
      id: 'p1',
      channel: endpoint.channel,
      events: ['{"type":"feed"}'],
      authorization: { host: endpoint.host, Authorization: `Bearer ${await s.t().token(a.id)}` },
    });
    // As AppSync refuses a publish: an UnauthorizedException, code 403.
    expect(await reply).toMatchObject({ type: 'publish_error', errors: [{ errorType: 'UnauthorizedException', errorCode: 403 }] });
    const posted = await fetch(`http://${endpoint.host}/event`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${await s.t().token(a.id)}` },
      body: JSON.stringify({ channel: endpoint.channel, events: ['{"type":"feed"}'] }),
    });
    expect(posted.status).toBe(401);
    expect(hints).toEqual([]);
    await client.close();
  });

  it('malformed messages are answered with errors, and the connection stays usable', async () => {
    const a = { id: freshId('a') };
    const { client, endpoint } = await listening(a);
    client.socket.send('not json');
    expect(await client.next((message) => message.type === 'error')).toMatchObject({ errors: [{ errorType: 'BadRequestException' }] });
    const bad = client.subscribe('/inbox/not allowed!').catch((error: unknown) => error);
    expect(((await bad) as RealtimeRefused).reply).toMatchObject({
      type: 'subscribe_error',
      errors: [{ errorType: 'BadRequestException' }],
    });
    const missing = client.subscribe('/elsewhere/x').catch((error: unknown) => error);
    expect(((await missing) as RealtimeRefused).reply).toMatchObject({ type: 'subscribe_error' });
    expect(await client.unsubscribe('nope')).toMatchObject({ type: 'unsubscribe_error' });
    const id = await client.subscribe(endpoint.channel);
    expect(await client.unsubscribe(id)).toEqual({ type: 'unsubscribe_success', id });
    await client.close();
  });
});
