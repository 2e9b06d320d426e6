import { TokenRejected, type TokenVerifier } from '../auth/tokens.js';
import { logger } from '../observability.js';
import { channelOf, groupChannelOf } from './channel.js';

/**
 * The Event API's Lambda authorizer (functions/realtime-authorizer.ts) and
 * the local server's real-time endpoint run this one decision: the REST
 * authorizer's token checks (shared/auth/tokens.ts, the same HS256 or JWKS
 * settings), then what the operation may do with a valid token.
 *
 * - EVENT_CONNECT: any valid token opens a connection.
 * - EVENT_SUBSCRIBE: only the token's own user's channel (channelOf), never a
 *   wildcard, never another user's.
 * - EVENT_PUBLISH: never: the namespace publishes with IAM only, the
 *   service's publisher role; a token never does.
 */
export type RealtimeOperation = 'EVENT_CONNECT' | 'EVENT_SUBSCRIBE' | 'EVENT_PUBLISH';

/** What AppSync Events hands a Lambda authorizer. */
export interface EventApiAuthorizerEvent {
  /** The `Authorization` value the client sent (in the connection's header subprotocol, or in a message's `authorization`). */
  authorizationToken: string;
  requestContext: {
    apiId: string;
    accountId: string;
    requestId: string;
    operation: RealtimeOperation;
    channelNamespaceName?: string;
    channel?: string;
  };
  requestHeaders?: Record<string, string>;
}

/** What AppSync Events expects back. */
export interface EventApiAuthorizerResult {
  isAuthorized: boolean;
  /**
   * Seconds AppSync may cache the answer. Always 0: AppSync caches per
   * token, and an answer for one channel must never stand for another.
   */
  ttlOverride: number;
  handlerContext?: Record<string, string>;
}

const BEARER = /^Bearer ([^\s]+)$/;

export const refused: EventApiAuthorizerResult = { isAuthorized: false, ttlOverride: 0 };

const allowed: EventApiAuthorizerResult = { isAuthorized: true, ttlOverride: 0 };

export async function authorizeRealtime(
  event: EventApiAuthorizerEvent,
  verifier: () => Promise<TokenVerifier>,
): Promise<EventApiAuthorizerResult> {
  const token = BEARER.exec(event.authorizationToken ?? '')?.[1];
  if (!token) return refusal(event, 'no bearer token');
  const tokens = await verifier();
  let identity: { userId: string; groups: ReadonlySet<string> };
  try {
    identity = await tokens.verify(token);
  } catch (error) {
    if (error instanceof TokenRejected) return refusal(event, `token rejected: ${error.message}`);
    throw error;
  }
  const { operation } = event.requestContext;
  if (operation === 'EVENT_CONNECT') return allowed;
  if (operation === 'EVENT_PUBLISH') return refusal(event, 'a token never publishes: the namespace takes IAM only');
  if (operation === 'EVENT_SUBSCRIBE' && mayHear(identity, channelPathOf(event.requestContext))) return allowed;
  return refusal(event, "not the token's own channel, nor a channel of a group the token lists");
}

/** The token's own channel, or the thread channel of a group the token lists (docs/api.md, "Sharing", large groups). */
function mayHear({ userId, groups }: { userId: string; groups: ReadonlySet<string> }, channel: string | undefined): boolean {
  if (channel === undefined) return false;
  return channel === channelOf(userId) || [...groups].some((groupId) => groupChannelOf(groupId) === channel);
}

/**
 * The channel an operation names, as a path `/<namespace>/<segment>…`,
 * whichever form AppSync hands it in: with or without its leading (or a
 * trailing) slash, with or without its namespace (then given apart, as
 * channelNamespaceName). A namespace given apart that the channel does not
 * start with is put in front, so the path can only match a channel of that
 * namespace; undefined when there is no channel.
 */
export function channelPathOf({ channel, channelNamespaceName }: EventApiAuthorizerEvent['requestContext']): string | undefined {
  if (typeof channel !== 'string' || channel === '') return undefined;
  const segments = channel.replace(/^\/|\/$/g, '').split('/');
  if (channelNamespaceName && segments[0] !== channelNamespaceName) segments.unshift(channelNamespaceName);
  return `/${segments.join('/')}`;
}

/** A refusal, logged with what AppSync asked (never the token or the headers): the one trace of why a client was turned away. */
function refusal(event: EventApiAuthorizerEvent, reason: string): EventApiAuthorizerResult {
  logger.warn(`real-time authorization refused: ${reason}`, { requestContext: event.requestContext });
  return refused;
}
