import type { RealtimeOperation } from '../../shared/realtime/authorization.js';
import { channelMatches, isChannelPath, namespaceOf } from '../../shared/realtime/channel.js';

/**
 * AppSync Events' WebSocket protocol as the local server speaks it, one
 * connection at a time, apart from the socket (infra/local/realtime.ts) so
 * its message handling is tested on its own (test/unit/infra/realtime-protocol.test.ts).
 *
 * Client → server: connection_init, subscribe {id, channel, authorization},
 * unsubscribe {id}, publish {id, channel, events, authorization}.
 * Server → client: connection_ack {connectionTimeoutMs}, ka, connection_error,
 * subscribe_success / subscribe_error, data {id, event}, unsubscribe_success /
 * unsubscribe_error, publish_success / publish_error, error.
 * Errors are `errors: [{errorType, message}]`, as AppSync sends them.
 */

export interface ProtocolError {
  errorType: string;
  message: string;
  errorCode?: number;
}

export const UNAUTHORIZED: ProtocolError = {
  errorType: 'UnauthorizedException',
  message: 'You are not authorized to make this call.',
  errorCode: 401,
};
/** A publish the caller may not make: AppSync refuses it with a 403 (an UnauthorizedException all the same). */
export const PUBLISH_REFUSED: ProtocolError = { ...UNAUTHORIZED, errorCode: 403 };
const badRequest = (message: string): ProtocolError => ({ errorType: 'BadRequestException', message, errorCode: 400 });

/** How long a client may go without a `ka` before it should drop the connection (AppSync's value). */
export const CONNECTION_TIMEOUT_MS = 300_000;
/** Subscriptions one connection may hold (AppSync's quota per connection). */
export const MAX_SUBSCRIPTIONS_PER_CONNECTION = 100;
/** AppSync's limit on one event and on a subscription id. */
export const MAX_EVENT_BYTES = 240 * 1024;
const MAX_ID_LENGTH = 128;

/** The close code of a connection the connect authorization refused: policy violation. */
export const CLOSE_UNAUTHORIZED = 1008;

/** The authorization headers a client sends (its header subprotocol, or a message's `authorization`). */
export type AuthorizationHeaders = Record<string, unknown>;

/** Runs the Event API's authorizer for one operation; true when allowed. */
export type Authorize = (operation: RealtimeOperation, headers: AuthorizationHeaders | undefined, channel?: string) => Promise<boolean>;

export interface SessionSocket {
  send(message: object): void;
  close(code: number, reason: string): void;
}

/** The namespaces the Event API has, each with what may publish to it. */
export interface Namespaces {
  has(namespace: string): boolean;
}

/** Who hears what is published: every open subscription, by exact channel, and the wildcard ones apart. */
export class RealtimeHub {
  private readonly exact = new Map<string, Set<Subscription>>();
  private readonly wildcards = new Set<Subscription>();

  add(subscription: Subscription): void {
    if (subscription.channel.endsWith('/*')) this.wildcards.add(subscription);
    else this.exact.set(subscription.channel, (this.exact.get(subscription.channel) ?? new Set()).add(subscription));
  }

  remove(subscription: Subscription): void {
    this.wildcards.delete(subscription);
    const same = this.exact.get(subscription.channel);
    same?.delete(subscription);
    if (same?.size === 0) this.exact.delete(subscription.channel);
  }

  /** Sends each event to every subscription whose channel pattern matches, in order; how many subscriptions heard it. */
  publish(channel: string, events: readonly string[]): number {
    const hearing = [
      ...(this.exact.get(channel) ?? []),
      ...[...this.wildcards].filter((subscription) => channelMatches(subscription.channel, channel)),
    ];
    for (const subscription of hearing) {
      for (const event of events) subscription.socket.send({ type: 'data', id: subscription.id, event });
    }
    return hearing.length;
  }

  get size(): number {
    let size = this.wildcards.size;
    for (const same of this.exact.values()) size += same.size;
    return size;
  }
}

interface Subscription {
  id: string;
  channel: string;
  socket: SessionSocket;
}

type ClientMessage = { type?: unknown; id?: unknown; channel?: unknown; events?: unknown; authorization?: unknown };

/**
 * One connection's state: whether it was initialised, its subscriptions, and
 * whether the connect authorization (the header subprotocol, checked when
 * the socket opened) refused it: then the answer to the client's
 * connection_init is connection_error and the socket closes, as the protocol
 * reads (a client such as Amplify's listens only once its socket is open).
 */
export class RealtimeSession {
  private initialised = false;
  private refused = false;
  private readonly subscriptions = new Map<string, Subscription>();
  private closed = false;

  constructor(
    private readonly socket: SessionSocket,
    private readonly hub: RealtimeHub,
    private readonly namespaces: Namespaces,
    private readonly authorize: Authorize,
  ) {}

  /** The connect authorization refused the connection: nothing but the client's connection_init is answered, with connection_error. */
  refuseConnection(): void {
    this.refused = true;
  }

  private refuse(): void {
    this.socket.send({ type: 'connection_error', errors: [UNAUTHORIZED] });
    this.end();
    this.socket.close(CLOSE_UNAUTHORIZED, 'Unauthorized');
  }

  /** The socket closed: its subscriptions go. */
  end(): void {
    this.closed = true;
    for (const subscription of this.subscriptions.values()) this.hub.remove(subscription);
    this.subscriptions.clear();
  }

  get subscriptionCount(): number {
    return this.subscriptions.size;
  }

  get isInitialised(): boolean {
    return this.initialised;
  }

  async receive(text: string): Promise<void> {
    let message: ClientMessage;
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
      message = parsed as ClientMessage;
    } catch {
      if (this.refused) return;
      return this.send({ type: 'error', errors: [badRequest('The message must be a JSON object')] });
    }
    if (this.refused) return message.type === 'connection_init' ? this.refuse() : undefined;
    switch (message.type) {
      case 'connection_init':
        this.initialised = true;
        return this.send({ type: 'connection_ack', connectionTimeoutMs: CONNECTION_TIMEOUT_MS });
      case 'subscribe':
        return this.subscribe(message);
      case 'unsubscribe':
        return this.unsubscribe(message);
      case 'publish':
        return this.publish(message);
      default:
        return this.send({
          type: 'error',
          ...(isId(message.id) ? { id: message.id } : {}),
          errors: [badRequest(`Unknown message type ${JSON.stringify(message.type ?? null)}`)],
        });
    }
  }

  private async subscribe(message: ClientMessage): Promise<void> {
    const { id, channel } = message;
    if (!isId(id)) return this.send({ type: 'error', errors: [badRequest('A subscribe message needs an id')] });
    const refuse = (error: ProtocolError) => this.send({ type: 'subscribe_error', id, errors: [error] });
    if (!this.initialised) return refuse(badRequest('Send connection_init before subscribing'));
    if (!isChannelPath(channel, { wildcard: true }))
      return refuse(badRequest('Invalid channel: a path of 1 to 5 segments of letters, digits and dashes, the last may be *'));
    if (!this.namespaces.has(namespaceOf(channel))) return refuse(badRequest(`Channel namespace ${namespaceOf(channel)} does not exist`));
    if (this.subscriptions.has(id)) return refuse(badRequest(`Subscription id ${id} is already in use on this connection`));
    if (this.subscriptions.size >= MAX_SUBSCRIPTIONS_PER_CONNECTION) return refuse(badRequest('Too many subscriptions on this connection'));
    if (!(await this.authorize('EVENT_SUBSCRIBE', headersOf(message.authorization), channel))) return refuse(UNAUTHORIZED);
    // The connection may have closed, or the id been taken, while the authorizer ran.
    if (this.closed) return;
    if (this.subscriptions.has(id)) return refuse(badRequest(`Subscription id ${id} is already in use on this connection`));
    const subscription: Subscription = { id, channel, socket: this.socket };
    this.subscriptions.set(id, subscription);
    this.hub.add(subscription);
    this.send({ type: 'subscribe_success', id });
  }

  private unsubscribe(message: ClientMessage): void {
    const { id } = message;
    if (!isId(id)) {
      this.send({ type: 'error', errors: [badRequest('An unsubscribe message needs an id')] });
      return;
    }
    const subscription = this.subscriptions.get(id);
    if (!subscription) {
      this.send({ type: 'unsubscribe_error', id, errors: [badRequest(`No subscription ${id} on this connection`)] });
      return;
    }
    this.subscriptions.delete(id);
    this.hub.remove(subscription);
    this.send({ type: 'unsubscribe_success', id });
  }

  /** Publishing over the WebSocket is authorized like a subscribe; the namespace takes IAM only, so a token never may. */
  private async publish(message: ClientMessage): Promise<void> {
    const { id, channel } = message;
    if (!isId(id)) return this.send({ type: 'error', errors: [badRequest('A publish message needs an id')] });
    const refuse = (error: ProtocolError) => this.send({ type: 'publish_error', id, errors: [error] });
    if (!isChannelPath(channel, { wildcard: false })) return refuse(badRequest('Invalid channel'));
    if (!(await this.authorize('EVENT_PUBLISH', headersOf(message.authorization), channel))) return refuse(PUBLISH_REFUSED);
    const problem = eventsProblem(message.events);
    if (problem) return refuse(badRequest(problem));
    const events = message.events as string[];
    this.hub.publish(channel, events);
    this.send({ type: 'publish_success', id, successful: events.map((_, index) => ({ identifier: `${id}-${index}`, index })), failed: [] });
  }

  private send(message: object): void {
    if (!this.closed) this.socket.send(message);
  }
}

/** Why a publish's `events` cannot be taken: 1 to 5 strings, each JSON, each within AppSync's size limit. */
export function eventsProblem(events: unknown): string | undefined {
  if (!Array.isArray(events) || events.length < 1 || events.length > 5) return 'events must be a list of 1 to 5 events';
  for (const event of events) {
    if (typeof event !== 'string') return 'Each event must be a string of JSON';
    if (Buffer.byteLength(event) > MAX_EVENT_BYTES) return `Each event must be at most ${MAX_EVENT_BYTES} bytes`;
    try {
      JSON.parse(event);
    } catch {
      return 'Each event must be a string of valid JSON';
    }
  }
  return undefined;
}

const isId = (id: unknown): id is string => typeof id === 'string' && id.length > 0 && id.length <= MAX_ID_LENGTH;

function headersOf(authorization: unknown): AuthorizationHeaders | undefined {
  return typeof authorization === 'object' && authorization !== null && !Array.isArray(authorization)
    ? (authorization as AuthorizationHeaders)
    : undefined;
}

/**
 * The authorization headers of the `header-` subprotocol: base64url (padding
 * optional) of a JSON object such as `{"host": …, "Authorization": "Bearer …"}`;
 * undefined when there is none or it does not decode.
 */
export function headersOfSubprotocols(protocols: readonly string[]): AuthorizationHeaders | undefined {
  const encoded = protocols.find((protocol) => protocol.startsWith('header-'))?.slice('header-'.length);
  if (!encoded || !/^[A-Za-z0-9_-]+={0,2}$/.test(encoded)) return undefined;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
    return headersOf(parsed);
  } catch {
    return undefined;
  }
}

/** A header's value, its name in any case. */
export function headerValue(headers: AuthorizationHeaders | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  const key = Object.keys(headers).find((candidate) => candidate.toLowerCase() === name.toLowerCase());
  const value = key === undefined ? undefined : headers[key];
  return typeof value === 'string' ? value : undefined;
}
