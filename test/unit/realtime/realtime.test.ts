import { afterEach, describe, expect, it, vi } from 'vitest';
import { signToken, tokenVerifier } from '../../../shared/auth/tokens.js';
import { eventId } from '../../../shared/events/ids.js';
import { eventItem } from '../../../shared/events/item.js';
import { logger } from '../../../shared/observability.js';
import { authorizeRealtime, type EventApiAuthorizerEvent, type RealtimeOperation } from '../../../shared/realtime/authorization.js';
import { channelMatches, channelOf, isChannelPath } from '../../../shared/realtime/channel.js';
import { feedHint, hintOfRecord } from '../../../shared/realtime/hint.js';

const SECRET = 'unit-secret';
const verifier = async () => tokenVerifier({ mode: 'secret', secret: SECRET, groupsClaim: 'groups' });
const request = (authorizationToken: string, operation: RealtimeOperation, channel?: string): EventApiAuthorizerEvent => ({
  authorizationToken,
  requestContext: {
    apiId: 'api',
    accountId: '1',
    requestId: 'r',
    operation,
    ...(channel ? { channel, channelNamespaceName: 'inbox' } : {}),
  },
});

describe("a user's channel", () => {
  it('is /inbox/ and a segment AppSync takes, the same for the same id and different for others, whatever the id holds', () => {
    const ids = ['alice', 'Alice', 'ü/ser with spaces', '🙂', 'a'.repeat(400)];
    const channels = ids.map(channelOf);
    for (const channel of channels) expect(isChannelPath(channel, { wildcard: false })).toBe(true);
    expect(new Set(channels).size).toBe(ids.length);
    expect(channelOf('alice')).toBe(channelOf('alice'));
  });

  it('matches exactly, or under a trailing wildcard', () => {
    expect(channelMatches('/inbox/a', '/inbox/a')).toBe(true);
    expect(channelMatches('/inbox/a', '/inbox/ab')).toBe(false);
    expect(channelMatches('/inbox/*', '/inbox/a/b')).toBe(true);
  });
});

describe('the real-time authorizer', () => {
  afterEach(() => vi.restoreAllMocks());

  it('connects any valid token and subscribes it to its own channel only, never with a wildcard, never publishes, and never lets AppSync cache', async () => {
    const token = `Bearer ${await signToken(SECRET, 'alice')}`;
    expect(await authorizeRealtime(request(token, 'EVENT_CONNECT'), verifier)).toEqual({ isAuthorized: true, ttlOverride: 0 });
    expect(await authorizeRealtime(request(token, 'EVENT_SUBSCRIBE', channelOf('alice')), verifier)).toEqual({
      isAuthorized: true,
      ttlOverride: 0,
    });
    for (const channel of [channelOf('bob'), '/inbox/*', `${channelOf('alice')}/x`, undefined]) {
      expect(await authorizeRealtime(request(token, 'EVENT_SUBSCRIBE', channel), verifier)).toEqual({
        isAuthorized: false,
        ttlOverride: 0,
      });
    }
    expect((await authorizeRealtime(request(token, 'EVENT_PUBLISH', channelOf('alice')), verifier)).isAuthorized).toBe(false);
  });

  it('takes its own channel in every form AppSync may name it, and nothing that only looks like it', async () => {
    const token = `Bearer ${await signToken(SECRET, 'alice')}`;
    const own = channelOf('alice');
    const segment = own.split('/').at(-1)!;
    const subscribe = (channel: string, channelNamespaceName?: string) =>
      authorizeRealtime(
        {
          authorizationToken: token,
          requestContext: {
            apiId: 'api',
            accountId: '1',
            requestId: 'r',
            operation: 'EVENT_SUBSCRIBE',
            channel,
            ...(channelNamespaceName ? { channelNamespaceName } : {}),
          },
        },
        verifier,
      );
    for (const [channel, namespace] of [
      [own, 'inbox'],
      [own.slice(1), 'inbox'],
      [`${own}/`, 'inbox'],
      [segment, 'inbox'],
      [`/${segment}`, 'inbox'],
      [own, undefined],
      [own.slice(1), undefined],
    ] as const) {
      expect((await subscribe(channel, namespace)).isAuthorized, `${channel} in ${namespace}`).toBe(true);
    }
    for (const [channel, namespace] of [
      [own, 'other'],
      [`/other/${segment}`, 'inbox'],
      [`/other/${segment}`, undefined],
      [segment, undefined],
      [`${own}//`, 'inbox'],
      [`/inbox//${segment}`, 'inbox'],
      ['/inbox/*', 'inbox'],
      ['', 'inbox'],
      [own.toUpperCase(), 'inbox'],
    ] as const) {
      expect((await subscribe(channel, namespace)).isAuthorized, `${channel} in ${namespace}`).toBe(false);
    }
  });

  it('logs what AppSync asked when it refuses, never the token', async () => {
    const warn = vi.spyOn(logger, 'warn').mockImplementation(() => undefined);
    const token = `Bearer ${await signToken(SECRET, 'alice')}`;
    const asked = request(token, 'EVENT_SUBSCRIBE', channelOf('bob'));
    expect((await authorizeRealtime(asked, verifier)).isAuthorized).toBe(false);
    expect(warn).toHaveBeenCalledTimes(1);
    const [message, attributes] = warn.mock.calls[0]!;
    expect(message).toMatch(/refused: not the token's own channel/);
    expect(attributes).toEqual({ requestContext: asked.requestContext });
    expect(JSON.stringify(warn.mock.calls)).not.toContain(token.slice('Bearer '.length));
    await authorizeRealtime(request(token, 'EVENT_SUBSCRIBE', channelOf('alice')), verifier);
    expect(warn).toHaveBeenCalledTimes(1);
  });

  it.each([
    ['a forged token', async () => `Bearer ${await signToken('other', 'alice')}`],
    ['an expired token', async () => `Bearer ${await signToken(SECRET, 'alice', { ttlSeconds: -10 })}`],
    ['no Bearer prefix', async () => signToken(SECRET, 'alice')],
    ['nothing', async () => ''],
  ])('refuses %s', async (_name, token) => {
    expect(await authorizeRealtime(request(await token(), 'EVENT_CONNECT'), verifier)).toEqual({ isAuthorized: false, ttlOverride: 0 });
  });
});

describe('a hint', () => {
  it("is the event's id and type and nothing else", () => {
    expect(feedHint({ id: 'evt_1', type: 'attachment.created', data: { secret: 1 } } as never)).toEqual({
      type: 'feed',
      event_id: 'evt_1',
      event_type: 'attachment.created',
    });
  });

  it("of a new event item goes to its user's channel and carries nothing of the resource", () => {
    const id = eventId(7);
    const event = {
      id,
      type: 'attachment.created' as const,
      created_at: 1,
      data: { object: { id: 'att_1', filename: 'secret plans.txt' } },
      request_id: null,
    };
    const image = Object.fromEntries(
      Object.entries(eventItem({ user: 'bob', group: null }, 7, event)).map(([name, value]) => [
        name,
        typeof value === 'number' ? { N: String(value) } : { S: String(value) },
      ]),
    );
    const hint = hintOfRecord({ eventName: 'INSERT', dynamodb: { Keys: { pk: image.pk!, sk: image.sk! }, NewImage: image } } as never);
    expect(hint.channel).toBe(channelOf('bob'));
    expect(JSON.parse(hint.event)).toEqual({ type: 'feed', event_id: id, event_type: 'attachment.created' });
    expect(hint.event).not.toContain('secret');
  });
});
