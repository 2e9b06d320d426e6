import { describe, expect, it } from 'vitest';
import {
  type Authorize,
  CLOSE_UNAUTHORIZED,
  CONNECTION_TIMEOUT_MS,
  headersOfSubprotocols,
  headerValue,
  MAX_SUBSCRIPTIONS_PER_CONNECTION,
  RealtimeHub,
  RealtimeSession,
} from '../../../../infra/local/realtime-protocol.js';
import type { Json } from '../../../support/api.js';

/** A session on a recording socket, with an authorizer that allows what `allow` says. */
function session(allow: Authorize = async () => true, hub = new RealtimeHub()) {
  const sent: Json[] = [];
  const closes: { code: number; reason: string }[] = [];
  const calls: Parameters<Authorize>[] = [];
  const socket = { send: (message: object) => sent.push(message), close: (code: number, reason: string) => closes.push({ code, reason }) };
  const authorize: Authorize = async (...args) => {
    calls.push(args);
    return allow(...args);
  };
  const it = new RealtimeSession(socket, hub, new Set(['inbox']), authorize);
  return {
    session: it,
    sent,
    closes,
    calls,
    hub,
    receive: (message: unknown) => it.receive(typeof message === 'string' ? message : JSON.stringify(message)),
  };
}

const auth = { host: 'example.com', Authorization: 'Bearer t' };

describe('the local real-time protocol', () => {
  it('acknowledges connection_init with the keep-alive timeout', async () => {
    const s = session();
    await s.receive({ type: 'connection_init' });
    expect(s.sent).toEqual([{ type: 'connection_ack', connectionTimeoutMs: CONNECTION_TIMEOUT_MS }]);
  });

  it("subscribes with the message's own authorization and channel, then delivers what is published there as data with the event as text", async () => {
    const s = session();
    await s.receive({ type: 'connection_init' });
    await s.receive({ type: 'subscribe', id: 's1', channel: '/inbox/u-1', authorization: auth });
    expect(s.calls).toEqual([['EVENT_SUBSCRIBE', auth, '/inbox/u-1']]);
    expect(s.sent.at(-1)).toEqual({ type: 'subscribe_success', id: 's1' });
    expect(s.hub.publish('/inbox/u-1', ['{"a":1}', '{"b":2}'])).toBe(1);
    expect(s.hub.publish('/inbox/u-2', ['{"c":3}'])).toBe(0);
    expect(s.sent.slice(-2)).toEqual([
      { type: 'data', id: 's1', event: '{"a":1}' },
      { type: 'data', id: 's1', event: '{"b":2}' },
    ]);
  });

  it('answers subscribe_error UnauthorizedException when the authorizer refuses, and subscribes nothing', async () => {
    const s = session(async () => false);
    await s.receive({ type: 'connection_init' });
    await s.receive({ type: 'subscribe', id: 's1', channel: '/inbox/u-1', authorization: auth });
    expect(s.sent.at(-1)).toEqual({
      type: 'subscribe_error',
      id: 's1',
      errors: [expect.objectContaining({ errorType: 'UnauthorizedException' })],
    });
    expect(s.hub.size).toBe(0);
  });

  it.each([
    ['a channel with a forbidden character', '/inbox/u 1'],
    ['a segment over 50 characters', `/inbox/${'a'.repeat(51)}`],
    ['more than five segments', '/inbox/a/b/c/d/e'],
    ['a wildcard not last', '/inbox/*/a'],
    ['no leading slash', 'inbox/a'],
    ['a namespace the API lacks', '/other/a'],
  ])('refuses %s without asking the authorizer', async (_name, channel) => {
    const s = session();
    await s.receive({ type: 'connection_init' });
    await s.receive({ type: 'subscribe', id: 's1', channel, authorization: auth });
    expect(s.sent.at(-1)).toMatchObject({ type: 'subscribe_error', id: 's1', errors: [{ errorType: 'BadRequestException' }] });
    expect(s.calls).toEqual([]);
  });

  it('refuses a subscription id already in use, and a subscribe before connection_init', async () => {
    const s = session();
    await s.receive({ type: 'subscribe', id: 's0', channel: '/inbox/u-1', authorization: auth });
    expect(s.sent.at(-1)).toMatchObject({ type: 'subscribe_error', id: 's0' });
    await s.receive({ type: 'connection_init' });
    await s.receive({ type: 'subscribe', id: 's1', channel: '/inbox/u-1', authorization: auth });
    await s.receive({ type: 'subscribe', id: 's1', channel: '/inbox/u-1', authorization: auth });
    expect(s.sent.at(-1)).toMatchObject({ type: 'subscribe_error', id: 's1', errors: [{ errorType: 'BadRequestException' }] });
    expect(s.hub.size).toBe(1);
  });

  it('holds at most the per-connection quota of subscriptions', async () => {
    const s = session();
    await s.receive({ type: 'connection_init' });
    for (let i = 0; i <= MAX_SUBSCRIPTIONS_PER_CONNECTION; i++)
      await s.receive({ type: 'subscribe', id: `s${i}`, channel: '/inbox/u-1', authorization: auth });
    expect(s.session.subscriptionCount).toBe(MAX_SUBSCRIPTIONS_PER_CONNECTION);
    expect(s.sent.at(-1)).toMatchObject({ type: 'subscribe_error', id: `s${MAX_SUBSCRIPTIONS_PER_CONNECTION}` });
  });

  it('unsubscribes a known id and answers unsubscribe_error for an unknown one', async () => {
    const s = session();
    await s.receive({ type: 'connection_init' });
    await s.receive({ type: 'subscribe', id: 's1', channel: '/inbox/u-1', authorization: auth });
    await s.receive({ type: 'unsubscribe', id: 's1' });
    expect(s.sent.at(-1)).toEqual({ type: 'unsubscribe_success', id: 's1' });
    expect(s.hub.publish('/inbox/u-1', ['{}'])).toBe(0);
    await s.receive({ type: 'unsubscribe', id: 's1' });
    expect(s.sent.at(-1)).toMatchObject({ type: 'unsubscribe_error', id: 's1' });
  });

  it('answers error BadRequestException to what is not a JSON object, an unknown type or a message without an id', async () => {
    const s = session();
    for (const message of ['nope', '[1]', '{"type":"hello"}', '{"type":"subscribe","channel":"/inbox/a"}', '{"type":"unsubscribe"}'])
      await s.receive(message);
    expect(s.sent.map((message) => [message.type, message.errors[0].errorType])).toEqual(Array(5).fill(['error', 'BadRequestException']));
  });

  it('refuses a publish the authorizer refuses, and publishes nothing', async () => {
    const s = session(async (operation) => operation !== 'EVENT_PUBLISH');
    await s.receive({ type: 'connection_init' });
    await s.receive({ type: 'subscribe', id: 's1', channel: '/inbox/u-1', authorization: auth });
    await s.receive({ type: 'publish', id: 'p1', channel: '/inbox/u-1', events: ['{}'], authorization: auth });
    expect(s.sent.at(-1)).toMatchObject({
      type: 'publish_error',
      id: 'p1',
      errors: [{ errorType: 'UnauthorizedException', errorCode: 403 }],
    });
    expect(s.sent.filter((message) => message.type === 'data')).toEqual([]);
  });

  it('a refused connection answers nothing until connection_init, then connection_error, and is closed', async () => {
    const s = session();
    s.session.refuseConnection();
    await s.receive({ type: 'subscribe', id: 's1', channel: '/inbox/u-1', authorization: auth });
    await s.receive({ type: 'nonsense' });
    expect(s.sent).toEqual([]);
    expect(s.closes).toEqual([]);
    await s.receive({ type: 'connection_init' });
    expect(s.sent).toEqual([{ type: 'connection_error', errors: [expect.objectContaining({ errorType: 'UnauthorizedException' })] }]);
    expect(s.closes).toEqual([{ code: CLOSE_UNAUTHORIZED, reason: 'Unauthorized' }]);
    expect(s.hub.size).toBe(0);
  });

  it('a closed session leaves the hub', async () => {
    const s = session();
    await s.receive({ type: 'connection_init' });
    await s.receive({ type: 'subscribe', id: 's1', channel: '/inbox/u-1', authorization: auth });
    expect(s.hub.size).toBe(1);
    s.session.end();
    expect(s.hub.size).toBe(0);
  });

  it('a subscribe whose connection closed while the authorizer ran subscribes nothing', async () => {
    let release!: () => void;
    const s = session(() => new Promise((resolve) => (release = () => resolve(true))));
    await s.receive({ type: 'connection_init' });
    const pending = s.receive({ type: 'subscribe', id: 's1', channel: '/inbox/u-1', authorization: auth });
    await new Promise((resolve) => setImmediate(resolve));
    s.session.end();
    release();
    await pending;
    expect(s.hub.size).toBe(0);
    expect(s.sent.at(-1)).toEqual({ type: 'connection_ack', connectionTimeoutMs: CONNECTION_TIMEOUT_MS });
  });

  it('a wildcard subscription hears every channel under its prefix', () => {
    const hub = new RealtimeHub();
    const sent: object[] = [];
    hub.add({ id: 'w', channel: '/inbox/*', socket: { send: (message) => sent.push(message), close: () => {} } });
    hub.publish('/inbox/a', ['1']);
    hub.publish('/inboxes/a', ['2']);
    expect(sent).toEqual([{ type: 'data', id: 'w', event: '1' }]);
  });
});

describe('the header subprotocol', () => {
  const encode = (value: unknown) => `header-${Buffer.from(JSON.stringify(value)).toString('base64url')}`;

  it('is base64url JSON of the authorization headers, padded or not, among the offered protocols', () => {
    const headers = { host: 'h.example', Authorization: 'Bearer a.b.c' };
    expect(headersOfSubprotocols(['aws-appsync-event-ws', encode(headers)])).toEqual(headers);
    expect(
      headersOfSubprotocols([`header-${Buffer.from(JSON.stringify(headers)).toString('base64')}`.replace(/\+/g, '-').replace(/\//g, '_')]),
    ).toEqual(headers);
    expect(headerValue(headers, 'authorization')).toBe('Bearer a.b.c');
  });

  it.each([[['aws-appsync-event-ws']], [['header-']], [['header-!!!']], [[encode('a string')]], [[encode([1])]], [['header-bm90IGpzb24']]])(
    'is undefined for %j',
    (protocols) => {
      expect(headersOfSubprotocols(protocols)).toBeUndefined();
    },
  );
});
