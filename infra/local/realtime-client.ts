import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';

/**
 * A client of an AppSync Events real-time endpoint, written from AWS's
 * description of the protocol (not from the local server): the
 * `aws-appsync-event-ws` subprotocol beside a `header-` one carrying the
 * authorization headers as base64url JSON, connection_init → connection_ack,
 * subscribe → subscribe_success | subscribe_error, data, unsubscribe, ka. It
 * talks to the deployed Event API and to `npm start` alike: `npm run listen`,
 * the integration tests and the bench use it.
 */
export interface ConnectOptions {
  /** `url` of GET /v1/realtime. */
  url: string;
  /** `host` of GET /v1/realtime: the Event API's HTTP domain, signed into the connection. */
  host: string;
  /** The API's bearer token. */
  token: string;
  /** How long to wait for connection_ack (or a refusal). */
  timeoutMs?: number;
}

export interface ServerMessage {
  type: string;
  id?: string;
  event?: string;
  errors?: { errorType: string; message: string }[];
  connectionTimeoutMs?: number;
}

export class RealtimeRefused extends Error {
  constructor(
    readonly reply: ServerMessage | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'RealtimeRefused';
  }
}

/** The `header-…` subprotocol: the authorization headers, base64url without padding. */
export function headerSubprotocol(headers: Record<string, string>): string {
  return `header-${Buffer.from(JSON.stringify(headers)).toString('base64url')}`;
}

export class RealtimeClient {
  /** Every message received, in order (ka included). */
  readonly received: ServerMessage[] = [];
  private readonly waiters = new Set<{ match: (message: ServerMessage) => boolean; resolve: (message: ServerMessage) => void }>();
  private readonly dataListeners = new Map<string, (event: unknown) => void>();
  closed: { code: number; reason: string } | undefined;

  private constructor(
    readonly socket: WebSocket,
    private readonly authorization: Record<string, string>,
  ) {
    socket.on('message', (data) => {
      const message = JSON.parse(data.toString()) as ServerMessage;
      this.received.push(message);
      if (message.type === 'data' && message.id && message.event !== undefined)
        this.dataListeners.get(message.id)?.(JSON.parse(message.event));
      for (const waiter of [...this.waiters]) {
        if (waiter.match(message)) {
          this.waiters.delete(waiter);
          waiter.resolve(message);
        }
      }
    });
    socket.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
    });
  }

  /** Opens the connection and waits for connection_ack; a connection_error (or a refused handshake) rejects. */
  static async connect({ url, host, token, timeoutMs = 10_000 }: ConnectOptions): Promise<RealtimeClient> {
    const authorization = { host, Authorization: `Bearer ${token}` };
    const socket = new WebSocket(url, ['aws-appsync-event-ws', headerSubprotocol(authorization)]);
    const client = new RealtimeClient(socket, authorization);
    const answer = client.next((message) => message.type === 'connection_ack' || message.type === 'connection_error', timeoutMs);
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('open', () => resolve());
        socket.once('error', (error) => reject(new RealtimeRefused(undefined, `connection refused: ${error.message}`)));
      });
    } catch (error) {
      answer.catch(() => undefined);
      throw error;
    }
    socket.send(JSON.stringify({ type: 'connection_init' }));
    const reply = await answer;
    if (reply.type !== 'connection_ack') throw new RealtimeRefused(reply, `connection refused: ${JSON.stringify(reply.errors)}`);
    return client;
  }

  /** Subscribes to `channel` and waits for subscribe_success; subscribe_error rejects. `onEvent` gets each event, parsed. */
  async subscribe(channel: string, onEvent: (event: unknown) => void = () => {}, { token }: { token?: string } = {}): Promise<string> {
    const id = randomUUID();
    const authorization = token ? { ...this.authorization, Authorization: `Bearer ${token}` } : this.authorization;
    this.dataListeners.set(id, onEvent);
    const reply = this.next((message) => message.id === id && (message.type === 'subscribe_success' || message.type === 'subscribe_error'));
    this.socket.send(JSON.stringify({ type: 'subscribe', id, channel, authorization }));
    const answer = await reply;
    if (answer.type !== 'subscribe_success') {
      this.dataListeners.delete(id);
      throw new RealtimeRefused(answer, `subscription to ${channel} refused: ${JSON.stringify(answer.errors)}`);
    }
    return id;
  }

  async unsubscribe(id: string): Promise<ServerMessage> {
    const reply = this.next((message) => message.id === id && message.type.startsWith('unsubscribe_'));
    this.socket.send(JSON.stringify({ type: 'unsubscribe', id }));
    const answer = await reply;
    this.dataListeners.delete(id);
    return answer;
  }

  /** Sends a raw message (tests of what the server refuses). */
  send(message: object): void {
    this.socket.send(JSON.stringify(message));
  }

  /** The next message that matches, from now on. */
  next(match: (message: ServerMessage) => boolean, timeoutMs = 10_000): Promise<ServerMessage> {
    return new Promise((resolve, reject) => {
      const waiter = {
        match,
        resolve: (message: ServerMessage) => {
          clearTimeout(timer);
          resolve(message);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new Error(`no matching message within ${timeoutMs} ms; received ${JSON.stringify(this.received.slice(-5))}`));
      }, timeoutMs);
      this.waiters.add(waiter);
    });
  }

  close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      this.socket.once('close', () => resolve());
      this.socket.close();
    });
  }
}
