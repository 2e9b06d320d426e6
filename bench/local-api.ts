import { signToken } from '../shared/auth/tokens.js';
import { countingProxy, type DynamoCounter } from './dynamodb-counter.js';
import { fileOf, multipartBody } from './multipart.js';
import { type BackendProcess, startProcess } from './processes.js';

/**
 * The local API in a server process of its own, as the parts that measure
 * it through HTTP start it, and a client of it for many users: every
 * DynamoDB call of the server (handlers and, when on, the stream consumers)
 * passes a counting proxy (dynamodb-counter.ts).
 */
export interface CountedServer {
  url: string;
  /** The server process, whose memory a part may read. */
  pid: number;
  counter: DynamoCounter;
  stop(): Promise<void>;
}

export interface ServerOptions {
  /** The stream consumers (cleanup, fan-out, and the events forwarder when a forward URL is given). */
  consumers: boolean;
  /** EVENTS_FORWARD_URL: where the server POSTs each new event in EventBridge's envelope (needs the consumers). */
  eventsForwardUrl?: string;
  /** Each request line the handlers log (shared/observability.ts), parsed. */
  onRequestLine?: (line: Record<string, Json>) => void;
}

export async function localServer(
  backends: { DYNAMODB_ENDPOINT: string; S3_ENDPOINT: string },
  authSecret: string,
  options: ServerOptions,
): Promise<CountedServer> {
  const counter = await countingProxy(backends.DYNAMODB_ENDPOINT);
  let server: BackendProcess<{ url: string; pid: number }>;
  try {
    server = await startProcess<{ url: string; pid: number }>(
      'server-process.ts',
      {
        ...backends,
        DYNAMODB_ENDPOINT: counter.endpoint,
        AUTH_SECRET: authSecret,
        BENCH_STREAM_CONSUMERS: options.consumers ? 'on' : 'off',
        ...(options.eventsForwardUrl ? { EVENTS_FORWARD_URL: options.eventsForwardUrl } : {}),
      },
      [],
      options.onRequestLine ? requestLinesTo(options.onRequestLine) : undefined,
    );
  } catch (error) {
    await counter.close();
    throw error;
  }
  return {
    url: server.info.url,
    pid: server.info.pid,
    counter,
    async stop() {
      await server.stop();
      await counter.close();
    },
  };
}

/** The JSON log lines whose message is 'request'; anything else the process prints is left alone. */
function requestLinesTo(sink: (line: Record<string, Json>) => void): (text: string) => void {
  return (text) => {
    if (!text.startsWith('{')) return;
    try {
      const line = JSON.parse(text) as Record<string, Json>;
      if (line.message === 'request') sink(line);
    } catch {
      // Not a log line of ours.
    }
  };
}

export interface User {
  id: string;
  token: string;
}

/** An answer's JSON, read by key: its shape is what the bench relies on, not what the compiler can know. */
// biome-ignore lint/suspicious/noExplicitAny: parsed JSON from the wire, read by key unchecked (the tests prove its shape)
export type Json = any;

/** A client of the local API for many users, each with a token of their own. */
export class Api {
  constructor(
    private readonly url: string,
    private readonly secret: string,
  ) {}

  async user(id: string, groups?: string[]): Promise<User> {
    return { id, token: await signToken(this.secret, id, groups ? { groups } : {}) };
  }

  /** `requestId`: the answer's x-request-id, which the events the request caused carry as their request_id. */
  async call(
    user: User,
    method: string,
    path: string,
    body?: URLSearchParams | { contentType: string; body: Buffer },
  ): Promise<{ status: number; json: Json; requestId: string | null }> {
    const multipart = body !== undefined && !(body instanceof URLSearchParams);
    const response = await fetch(`${this.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${user.token}`, ...(multipart ? { 'content-type': body.contentType } : {}) },
      ...(body === undefined ? {} : { body: multipart ? body.body : body }),
    });
    return { status: response.status, json: await response.json(), requestId: response.headers.get('x-request-id') };
  }

  /** The call, which must answer `status`. */
  async expect(status: number, user: User, method: string, path: string, body?: Parameters<Api['call']>[3]): Promise<Json> {
    const answer = await this.call(user, method, path, body);
    if (answer.status !== status)
      throw new Error(`${method} ${path} as ${user.id}: ${answer.status}, expected ${status}: ${JSON.stringify(answer.json)}`);
    return answer.json;
  }

  /** The user's side with a contact or in a group (201 new, 200 when they hold one). */
  async side(user: User, counterpart: { contact_id: string } | { group_id: string }): Promise<string> {
    const answer = await this.call(user, 'POST', '/v1/conversations', new URLSearchParams(counterpart));
    if (answer.status !== 201 && answer.status !== 200)
      throw new Error(`POST /v1/conversations as ${user.id}: ${answer.status} ${JSON.stringify(answer.json)}`);
    return answer.json.id as string;
  }

  /** A small file uploaded into the user's side: the attachment, and when its 201 came (performance.now()). */
  async upload(user: User, conversationId: string): Promise<{ attachment: Json; answeredAt: number }> {
    const file = fileOf(4096);
    const answer = await this.call(user, 'POST', '/v1/attachments', multipartBody(file, { conversation_id: conversationId }));
    const answeredAt = performance.now();
    if (answer.status !== 201) throw new Error(`upload as ${user.id}: ${answer.status} ${JSON.stringify(answer.json)}`);
    return { attachment: answer.json, answeredAt };
  }
}
