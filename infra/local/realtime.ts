import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';
import { type WebSocket, WebSocketServer } from 'ws';
import { logger } from '../../shared/observability.js';
import type { EventApiAuthorizerEvent, EventApiAuthorizerResult } from '../../shared/realtime/authorization.js';
import { isChannelPath, namespaceOf, PUBLISH_PATH, REALTIME_NAMESPACE, REALTIME_PATH } from '../../shared/realtime/channel.js';
import {
  type AuthorizationHeaders,
  type Authorize,
  eventsProblem,
  headersOfSubprotocols,
  headerValue,
  MAX_EVENT_BYTES,
  type ProtocolError,
  RealtimeHub,
  RealtimeSession,
  UNAUTHORIZED,
} from './realtime-protocol.js';

/** The subprotocol every AppSync Events client asks for. */
export const EVENT_SUBPROTOCOL = 'aws-appsync-event-ws';
/** How often the server sends `ka` (AppSync's real-time endpoint sends one about every minute). */
export const KEEP_ALIVE_MS = 60_000;
/** A header-signed request may be dated at most this far from now, as AWS allows. */
const MAX_SKEW_MS = 15 * 60 * 1000;
/** What AppSync takes in one publish request's body: five events of at most 240 KiB, and the envelope. */
const MAX_PUBLISH_BODY_BYTES = 5 * MAX_EVENT_BYTES + 4096;
const LOCAL_API_ID = 'local';

export interface RealtimeOptions {
  /** The Event API's Lambda authorizer (functions/realtime-authorizer.ts), the same module AWS runs. */
  authorizer: (event: EventApiAuthorizerEvent) => Promise<EventApiAuthorizerResult>;
  region: string;
  account: string;
  /** The secret of every local key (the base key and the functions' keys share it: infra/local/s3-roles.ts). */
  secretAccessKey: string;
  /** Whether the key may publish to the namespace: the role's permissions, as IAM would answer. */
  mayPublish: (accessKeyId: string) => boolean;
  keepAliveMs?: number;
}

export interface LocalRealtime {
  /** Answers a request on the Event API's HTTP publish path; false when the request is not one. */
  handleRequest(request: IncomingMessage, response: ServerResponse): boolean;
  /** Open connections, and subscriptions over all of them (the bench reads these). */
  readonly connections: number;
  readonly subscriptions: number;
  close(): Promise<void>;
}

/**
 * AppSync Events' real-time endpoint and HTTP publish endpoint on the local
 * server's port (docs/api.md, "The live inbox"): WebSocket connections on
 * /event/realtime speaking the protocol of realtime-protocol.ts, each
 * connection and subscription authorized by the same Lambda authorizer the
 * Event API runs; and POST /event, SigV4-signed (service appsync) by a key
 * whose role may publish, which is how the publisher (functions/realtime-publisher.ts)
 * reaches subscribers here as on AWS.
 */
export function attachRealtime(server: Server, options: RealtimeOptions): LocalRealtime {
  return new LocalEventApi(server, options);
}

class LocalEventApi implements LocalRealtime {
  private readonly hub = new RealtimeHub();
  private readonly namespaces = new Set([REALTIME_NAMESPACE]);
  private readonly sockets = new Set<WebSocket>();
  private readonly wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_PUBLISH_BODY_BYTES,
    // The client offers the event subprotocol and its header-… one; the server answers with the first only, as AppSync does.
    handleProtocols: (protocols) => (protocols.has(EVENT_SUBPROTOCOL) ? EVENT_SUBPROTOCOL : false),
  });
  private readonly onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => this.upgrade(request, socket, head);

  constructor(
    private readonly server: Server,
    private readonly options: RealtimeOptions,
  ) {
    server.on('upgrade', this.onUpgrade);
  }

  get connections(): number {
    return this.sockets.size;
  }

  get subscriptions(): number {
    return this.hub.size;
  }

  handleRequest(request: IncomingMessage, response: ServerResponse): boolean {
    if (new URL(request.url ?? '/', 'http://local').pathname !== PUBLISH_PATH) return false;
    if (request.method !== 'POST') {
      response.writeHead(405, { allow: 'POST', 'content-length': 0 });
      response.end();
      return true;
    }
    this.publish(request, response).catch((error: unknown) => {
      logger.error('local publish failed', { error });
      if (!response.headersSent) response.writeHead(500);
      response.end();
    });
    return true;
  }

  /** Bound: the server's stoppers call it on its own. */
  readonly close = async (): Promise<void> => {
    this.server.off('upgrade', this.onUpgrade);
    for (const ws of this.sockets) ws.terminate();
    await new Promise<void>((done) => this.wss.close(() => done()));
  };

  /** Runs the Event API's authorizer for one operation, as AppSync hands it the request; a failing authorizer refuses. */
  private readonly authorize: Authorize = async (operation, headers, channel) => {
    const token = headerValue(headers, 'Authorization');
    if (!token) return false;
    try {
      const answer = await this.options.authorizer({
        authorizationToken: token,
        requestContext: {
          apiId: LOCAL_API_ID,
          accountId: this.options.account,
          requestId: randomUUID(),
          operation,
          ...(channel ? { channelNamespaceName: namespaceOf(channel), channel } : {}),
        },
        requestHeaders: Object.fromEntries(
          Object.entries(headers ?? {}).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
        ),
      });
      return answer.isAuthorized === true;
    } catch (error) {
      // AppSync refuses the operation when its authorizer fails.
      logger.error('the real-time authorizer failed', { error });
      return false;
    }
  };

  /** A WebSocket handshake: on the real-time path with the event subprotocol, a session; anything else refused as AppSync does. */
  private upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (new URL(request.url ?? '/', 'http://local').pathname !== REALTIME_PATH) {
      // Nothing else on this port speaks WebSocket.
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const offered = (request.headers['sec-websocket-protocol'] ?? '').split(',').map((protocol) => protocol.trim());
    if (!offered.includes(EVENT_SUBPROTOCOL)) {
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    this.wss.handleUpgrade(request, socket, head, (ws) => this.openSession(ws, headersOfSubprotocols(offered)));
  }

  /** One connection: its session hears the socket's messages in order, after the connect authorization; ka while initialised. */
  private openSession(ws: WebSocket, connectHeaders: AuthorizationHeaders | undefined): void {
    this.sockets.add(ws);
    const session = new RealtimeSession(
      {
        send: (message) => {
          if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(message));
        },
        close: (code, reason) => ws.close(code, reason),
      },
      this.hub,
      this.namespaces,
      this.authorize,
    );
    // Messages wait for the connect authorization, in order; a refusal answers the client's connection_init.
    let queue = this.authorize('EVENT_CONNECT', connectHeaders).then((allowed) => {
      if (!allowed) session.refuseConnection();
    });
    ws.on('message', (data, isBinary) => {
      queue = queue.then(() => session.receive(isBinary ? '' : data.toString()));
    });
    const keepAlive = setInterval(() => {
      if (session.isInitialised && ws.readyState === ws.OPEN) ws.send('{"type":"ka"}');
    }, this.options.keepAliveMs ?? KEEP_ALIVE_MS);
    ws.on('close', () => {
      clearInterval(keepAlive);
      session.end();
      this.sockets.delete(ws);
    });
    ws.on('error', () => ws.terminate());
  }

  private signer(accessKeyId: string): SignatureV4 {
    return new SignatureV4({
      service: 'appsync',
      region: this.options.region,
      credentials: { accessKeyId, secretAccessKey: this.options.secretAccessKey },
      sha256: Sha256,
    });
  }

  /** POST /event: a signed body of a channel and its events, handed to every subscription that hears it. */
  private async publish(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of request as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_PUBLISH_BODY_BYTES) return answerError(response, 413, invalid('Request too large'));
      chunks.push(chunk);
    }
    const body = Buffer.concat(chunks).toString('utf8');
    const signature = await signatureProblem(request, body, (accessKeyId) => this.signer(accessKeyId), this.options);
    if (signature) return answerError(response, signature.status, { ...UNAUTHORIZED, message: signature.message });
    let parsed: { channel?: unknown; events?: unknown };
    try {
      parsed = JSON.parse(body) as typeof parsed;
    } catch {
      return answerError(response, 400, invalid('The body must be JSON'));
    }
    const { channel, events } = parsed ?? {};
    if (!isChannelPath(channel, { wildcard: false })) return answerError(response, 400, invalid('Invalid channel'));
    if (!this.namespaces.has(namespaceOf(channel)))
      return answerError(response, 404, {
        errorType: 'NotFoundException',
        message: `Channel namespace ${namespaceOf(channel)} does not exist`,
      });
    const problem = eventsProblem(events);
    if (problem) return answerError(response, 400, invalid(problem));
    this.hub.publish(channel, events as string[]);
    answerJson(response, 200, { successful: (events as string[]).map((_, index) => ({ identifier: randomUUID(), index })), failed: [] });
  }
}

function answerJson(response: ServerResponse, status: number, body: object): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

/** The Event API's error envelope on HTTP, as AppSync answers: `{"errors": [{"errorType", "message"}]}`. */
function answerError(response: ServerResponse, status: number, error: ProtocolError): void {
  answerJson(response, status, { errors: [error] });
}

const invalid = (message: string): ProtocolError => ({ errorType: 'BadRequestException', message });

const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request,\s*SignedHeaders=([a-z0-9;-]+),\s*Signature=([0-9a-f]{64})$/;

/**
 * Why a publish request's SigV4 signature does not let it publish, as the
 * Event API would refuse it (401 unsigned or not signed right, 403 signed
 * by a key that may not publish), or undefined: the signature is recomputed
 * with the SDK's signer over the request as it arrived (method, path, the
 * signed headers, the body, its date), the date must be within 15 minutes,
 * and the key's role must hold appsync:EventPublish on the namespace.
 */
async function signatureProblem(
  request: IncomingMessage,
  body: string,
  signer: (accessKeyId: string) => SignatureV4,
  options: RealtimeOptions,
): Promise<{ status: number; message: string } | undefined> {
  const match = AUTHORIZATION.exec(request.headers.authorization ?? '');
  if (!match) return { status: 401, message: 'Publishing needs a SigV4 (IAM) signature: this namespace publishes with IAM only' };
  const [, accessKeyId, , region, service, signedHeaders, signature] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const amzDate = request.headers['x-amz-date'];
  const signedAt = typeof amzDate === 'string' ? parseAmzDate(amzDate) : undefined;
  if (!signedAt) return { status: 401, message: 'The request has no valid X-Amz-Date' };
  if (Math.abs(Date.now() - signedAt.getTime()) > MAX_SKEW_MS)
    return { status: 401, message: 'Signature expired: the request is dated more than 15 minutes away' };
  if (service !== 'appsync' || region !== options.region)
    return { status: 401, message: `The credential scope must be ${options.region}/appsync` };
  const headers: Record<string, string> = {};
  for (const name of signedHeaders.split(';')) {
    const value = request.headers[name];
    if (value === undefined) return { status: 401, message: `Signed header ${name} is missing` };
    headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const url = new URL(request.url ?? '/', 'http://local');
  const expected = await signer(accessKeyId).sign(
    {
      method: request.method ?? 'POST',
      protocol: 'http:',
      hostname: headers.host ?? '',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers,
      body,
    },
    { signingDate: signedAt, signableHeaders: new Set(signedHeaders.split(';')) },
  );
  const computed = /Signature=([0-9a-f]{64})/.exec(String(expected.headers.authorization ?? expected.headers.Authorization ?? ''))?.[1];
  if (computed !== signature)
    return { status: 401, message: 'The request signature we calculated does not match the signature you provided' };
  // Signed, but by a key whose role may not publish: refused as AppSync refuses a publish, 403.
  if (!options.mayPublish(accessKeyId))
    return { status: 403, message: `The key ${accessKeyId} is not authorized to perform appsync:EventPublish on this namespace` };
  return undefined;
}

function parseAmzDate(value: string): Date | undefined {
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!match) return undefined;
  const [, y, mo, d, h, mi, s] = match.map(Number) as [number, number, number, number, number, number, number];
  return new Date(Date.UTC(y, mo - 1, d, h, mi, s));
}
