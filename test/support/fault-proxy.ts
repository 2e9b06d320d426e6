import { connect, createServer, type Server, type Socket } from 'node:net';
import { mulberry32 } from '../../bench/population.js';
import { messageLength, parseHead, withoutHeader } from './http-framing.js';

/**
 * A fault-injecting TCP proxy on loopback, in front of DynamoDB or S3, driven
 * by the test. It reads HTTP/1.1 requests off each client connection (keep-alive
 * included), so faults apply per request:
 *
 * - `reset_before`: the connection is reset before the request is forwarded
 *   (the backend never sees it);
 * - `reset_after`: the request is forwarded, the backend's whole answer read,
 *   and then the client's connection is reset: the backend did the work, its
 *   answer is lost, and the SDK retries;
 * - `stall`: the answer is held for `ms` (past the SDK's request timeout, the
 *   client gives up after the backend did the work);
 * - `delay`: the request is held for `ms` before it is forwarded (the backend
 *   runs it late, e.g. after a lease ran out);
 * - `hold`: the request is held until the test releases its rule;
 * - `outage` (`down()` until `up()`): every connection and request is reset.
 *
 * Faults come from rules (the Nth request matching a predicate) or from a
 * seeded random choice with rates; rules win.
 */
export type FaultKind = 'reset_before' | 'reset_after' | 'stall' | 'delay' | 'hold' | 'outage';

export interface ProxiedRequest {
  /** 1-based order of arrival at this proxy. */
  seq: number;
  method: string;
  path: string;
  /** Lower-cased names. */
  headers: Record<string, string>;
  body: Buffer;
  /** DynamoDB's operation, e.g. `DynamoDB_20120810.TransactWriteItems`; undefined for S3. */
  target: string | undefined;
}

export type RuleFault = { kind: 'reset_before' } | { kind: 'reset_after' } | { kind: 'stall'; ms: number } | { kind: 'delay'; ms: number } | { kind: 'hold' };

export interface RuleSpec {
  match: (request: ProxiedRequest) => boolean;
  /** Which matching request gets the fault first (1 = the first match). */
  nth?: number;
  /** How many consecutive matches from the nth on get it (default 1). */
  times?: number;
  fault: RuleFault;
}

export interface Rule {
  /** Resolves with the first request the fault was applied to. */
  hit: Promise<ProxiedRequest>;
  /** How many requests got the fault so far. */
  readonly fired: number;
  /** Lets held requests (and later matches) go on. */
  release(): void;
}

export interface RandomFaults {
  seed: number;
  /** Probability of each fault per request; the sum must stay under 1. */
  rates: Partial<Record<'reset_before' | 'reset_after' | 'stall' | 'delay', number>>;
  stallMs: number;
  /** A delay is drawn uniformly from this range. */
  delayMs: [number, number];
  /** Only requests that match get random faults (default: all). */
  match?: (request: ProxiedRequest) => boolean;
}

export interface ProxyStats {
  requests: number;
  faults: Record<FaultKind, number>;
}

export interface FaultProxy {
  /** `http://127.0.0.1:<port>`: give this to the client instead of the backend. */
  endpoint: string;
  inject(rule: RuleSpec): Rule;
  randomize(faults: RandomFaults | undefined): void;
  /** Full outage: every connection and request is reset until `up()`. */
  down(): void;
  up(): void;
  /** Pass everything through: no rules, no random faults, no outage (held requests are released). */
  calm(): void;
  stats(): ProxyStats;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const emptyFaults = (): Record<FaultKind, number> => ({ reset_before: 0, reset_after: 0, stall: 0, delay: 0, hold: 0, outage: 0 });

interface ActiveRule {
  spec: RuleSpec;
  matches: number;
  fired: number;
  released: boolean;
  release: () => void;
  releasedPromise: Promise<void>;
  onHit: (request: ProxiedRequest) => void;
}

type Decision = { kind: 'pass' } | { kind: 'reset_before' } | { kind: 'reset_after' } | { kind: 'stall'; ms: number } | { kind: 'delay'; ms: number } | { kind: 'hold'; until: Promise<void> } | { kind: 'outage' };

export async function startFaultProxy(upstream: string): Promise<FaultProxy> {
  const target = new URL(upstream);
  const upstreamPort = Number(target.port);
  const upstreamHost = target.hostname;
  const sockets = new Set<Socket>();
  let rules: ActiveRule[] = [];
  let random: { spec: RandomFaults; next: () => number } | undefined;
  let outage = false;
  let seq = 0;
  const stats: ProxyStats = { requests: 0, faults: emptyFaults() };

  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    // Resets are the point of this proxy; an error on a socket is never the test's failure.
    socket.on('error', () => {});
    return socket;
  };

  const decide = (request: ProxiedRequest): Decision => {
    if (outage) return { kind: 'outage' };
    for (const rule of rules) {
      if (rule.released || !rule.spec.match(request)) continue;
      rule.matches += 1;
      const first = rule.spec.nth ?? 1;
      if (rule.matches < first || rule.matches >= first + (rule.spec.times ?? 1)) continue;
      rule.fired += 1;
      rule.onHit(request);
      const fault = rule.spec.fault;
      return fault.kind === 'hold' ? { kind: 'hold', until: rule.releasedPromise } : fault;
    }
    if (random && (random.spec.match?.(request) ?? true)) {
      const draw = random.next();
      const magnitude = random.next();
      let threshold = 0;
      for (const kind of ['reset_before', 'reset_after', 'stall', 'delay'] as const) {
        threshold += random.spec.rates[kind] ?? 0;
        if (draw >= threshold) continue;
        if (kind === 'stall') return { kind, ms: random.spec.stallMs };
        if (kind === 'delay') {
          const [low, high] = random.spec.delayMs;
          return { kind, ms: Math.round(low + magnitude * (high - low)) };
        }
        return { kind };
      }
    }
    return { kind: 'pass' };
  };

  const server: Server = createServer((client) => {
    track(client);
    if (outage) {
      stats.faults.outage += 1;
      client.resetAndDestroy();
      return;
    }
    serveConnection(client);
  });

  /** One client connection: its requests, one after another, each over one upstream connection kept alive alongside. */
  function serveConnection(client: Socket) {
    let pending = Buffer.alloc(0);
    let continued = false;
    let busy = false;
    let upstreamSocket: Socket | undefined;

    const upstreamConnection = () =>
      new Promise<Socket>((resolve, reject) => {
        if (upstreamSocket && !upstreamSocket.destroyed) return resolve(upstreamSocket);
        const socket = track(connect(upstreamPort, upstreamHost));
        socket.once('connect', () => resolve(socket));
        socket.once('error', reject);
        socket.on('close', () => {
          if (upstreamSocket === socket) upstreamSocket = undefined;
        });
        upstreamSocket = socket;
      });

    /** Sends the request upstream and reads its whole answer; undefined when the backend failed us. */
    const exchange = async (raw: Buffer, method: string): Promise<Buffer | undefined> => {
      let socket: Socket;
      try {
        socket = await upstreamConnection();
      } catch {
        return undefined;
      }
      return new Promise((resolve) => {
        let data = Buffer.alloc(0);
        const finish = (answer: Buffer | undefined) => {
          socket.off('data', onData);
          socket.off('close', onClose);
          resolve(answer);
        };
        const complete = (closed: boolean) => {
          for (;;) {
            const length = messageLength(data, { kind: 'response', requestMethod: method, closed });
            if (length === undefined) return closed ? finish(undefined) : undefined;
            const status = Number(parseHead(data)!.startLine.split(' ')[1]);
            // An interim answer (1xx) is not the answer; the request's Expect header was answered here.
            if (status >= 100 && status < 200) {
              data = data.subarray(length);
              continue;
            }
            return finish(data.subarray(0, length));
          }
        };
        const onData = (chunk: Buffer) => {
          data = Buffer.concat([data, chunk]);
          complete(false);
        };
        const onClose = () => complete(true);
        socket.on('data', onData);
        socket.on('close', onClose);
        socket.write(raw);
      });
    };

    const reset = () => {
      client.resetAndDestroy();
      upstreamSocket?.destroy();
    };

    const handle = async (raw: Buffer, request: ProxiedRequest) => {
      stats.requests += 1;
      const decision = decide(request);
      if (decision.kind !== 'pass') stats.faults[decision.kind] += 1;
      if (decision.kind === 'outage' || decision.kind === 'reset_before') return reset();
      if (decision.kind === 'delay') await sleep(decision.ms);
      if (decision.kind === 'hold') await decision.until;
      if (client.destroyed) return upstreamSocket?.destroy();
      const answer = await exchange(raw, request.method);
      if (answer === undefined || decision.kind === 'reset_after') return reset();
      if (decision.kind === 'stall') await sleep(decision.ms);
      if (client.destroyed) return upstreamSocket?.destroy();
      client.write(answer);
    };

    const pump = async () => {
      if (busy) return;
      busy = true;
      try {
        while (!client.destroyed) {
          const head = parseHead(pending);
          if (!head) break;
          // A client that waits for 100 Continue before its body gets it from here; the backend never sees the Expect.
          if (!continued && /100-continue/i.test(head.headers.expect ?? '')) {
            continued = true;
            client.write('HTTP/1.1 100 Continue\r\n\r\n');
          }
          const length = messageLength(pending, { kind: 'request' });
          if (length === undefined) break;
          const message = pending.subarray(0, length);
          pending = pending.subarray(length);
          continued = false;
          const [method = '', path = ''] = head.startLine.split(' ');
          const body = message.subarray(head.length);
          const raw = Buffer.concat([withoutHeader(message.subarray(0, head.length), 'expect'), body]);
          await handle(raw, { seq: ++seq, method, path, headers: head.headers, body, target: head.headers['x-amz-target'] });
        }
      } catch {
        reset();
      } finally {
        busy = false;
      }
      if (!client.destroyed && pending.length > 0 && messageLength(pending, { kind: 'request' }) !== undefined) void pump();
    };

    client.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      void pump();
    });
    client.on('close', () => upstreamSocket?.destroy());
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };

  const releaseAll = () => {
    for (const rule of rules) rule.release();
  };

  return {
    endpoint: `http://127.0.0.1:${port}`,
    inject(spec) {
      let onHit!: (request: ProxiedRequest) => void;
      const hit = new Promise<ProxiedRequest>((resolve) => (onHit = resolve));
      let release!: () => void;
      const releasedPromise = new Promise<void>((resolve) => (release = resolve));
      const rule: ActiveRule = {
        spec,
        matches: 0,
        fired: 0,
        released: false,
        onHit,
        releasedPromise,
        release: () => {
          rule.released = true;
          release();
        },
      };
      rules.push(rule);
      return {
        hit,
        get fired() {
          return rule.fired;
        },
        release: rule.release,
      };
    },
    randomize(faults) {
      random = faults && { spec: faults, next: mulberry32(faults.seed) };
    },
    down() {
      outage = true;
    },
    up() {
      outage = false;
    },
    calm() {
      outage = false;
      random = undefined;
      releaseAll();
      rules = [];
    },
    stats: () => ({ requests: stats.requests, faults: { ...stats.faults } }),
    async close() {
      releaseAll();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}

/** Predicates for rules. */
export const dynamodbCall =
  (operation: string, bodyIncludes: readonly string[] = []) =>
  (request: ProxiedRequest): boolean =>
    request.target === `DynamoDB_20120810.${operation}` && bodyIncludes.every((text) => request.body.includes(text));

export const anyDynamodbCall =
  (operations: readonly string[], bodyIncludes: readonly string[] = []) =>
  (request: ProxiedRequest): boolean =>
    operations.some((operation) => dynamodbCall(operation, bodyIncludes)(request));

export const s3Call =
  (method: string, pathIncludes: string) =>
  (request: ProxiedRequest): boolean =>
    request.target === undefined && request.method === method && request.path.includes(pathIncludes);

/** S3 requests of a multipart upload, told apart by method and query. */
const s3Query = (request: ProxiedRequest) => new URL(request.path, 'http://s3').searchParams;
export const isS3Assembly = (request: ProxiedRequest): boolean => request.method === 'POST' && s3Query(request).has('uploadId');
export const isS3Start = (request: ProxiedRequest): boolean => request.method === 'POST' && s3Query(request).has('uploads');
export const isS3Head = (request: ProxiedRequest): boolean => request.method === 'HEAD';
export const isS3ObjectDelete = (request: ProxiedRequest): boolean => request.method === 'DELETE' && !s3Query(request).has('uploadId');

/** Every matching request is cut, before the backend sees it or after it answered (the answer lost), until the proxy is calmed. */
export const cutEvery = (proxy: FaultProxy, match: (request: ProxiedRequest) => boolean, when: 'before' | 'after' = 'before'): Rule =>
  proxy.inject({ match, times: Number.POSITIVE_INFINITY, fault: { kind: when === 'after' ? 'reset_after' : 'reset_before' } });
