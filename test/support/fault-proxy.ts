import { randomBytes } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { mulberry32 } from '../../bench/population.js';
import { functionKeyId } from '../../infra/local/iam.js';
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
 * - `outage` (`down()` until `up()`): every connection and request is reset;
 * - `throttle`: the backend never sees the request, and the proxy answers as
 *   a throttled backend does (throttledAnswer): DynamoDB's HTTP 400 with
 *   ProvisionedThroughputExceededException or ThrottlingException, or for a
 *   TransactWriteItems a TransactionCanceledException whose cancellation
 *   reasons say ThrottlingError; S3's 503 SlowDown;
 * - `conflict` (a TransactWriteItems): the backend never sees it, and the
 *   proxy answers as DynamoDB does when another transaction holds its items
 *   (conflictAnswer): contention for as long as the rule lasts;
 * - `lag` (a DynamoDB Query of an index): the answer leaves out the items
 *   `hide` picks, as an index that has not caught up with their writes yet
 *   answers on AWS (a GSI is eventually consistent; DynamoDB Local's never lags).
 *
 * Faults come from rules (the Nth request matching a predicate) or from a
 * seeded random choice with rates; rules win.
 */
export type FaultKind = 'reset_before' | 'reset_after' | 'stall' | 'delay' | 'hold' | 'outage' | 'throttle' | 'conflict' | 'lag';

/** An item of a DynamoDB answer, in its wire form (`{ "pk": { "S": "…" } }`). */
export type WireItem = Record<string, Record<string, unknown>>;

export interface ProxiedRequest {
  /** 1-based order of arrival at this proxy. */
  seq: number;
  method: string;
  path: string;
  /** Lower-cased names. */
  headers: Record<string, string>;
  body: Buffer;
  /** DynamoDB's or SQS's operation, e.g. `DynamoDB_20120810.TransactWriteItems`, `AmazonSQS.SendMessageBatch`; undefined for S3. */
  target: string | undefined;
}

/** How a throttled DynamoDB answers (S3 has one way: SlowDown). */
export type DynamodbThrottling = 'ProvisionedThroughputExceededException' | 'ThrottlingException' | 'TransactionCanceledException';

export type RuleFault =
  | { kind: 'reset_before' }
  | { kind: 'reset_after' }
  | { kind: 'stall'; ms: number }
  | { kind: 'delay'; ms: number }
  | { kind: 'hold' }
  /** `as`: DynamoDB's answer (default: a transaction's cancellation for a TransactWriteItems, else ProvisionedThroughputExceededException). */
  | { kind: 'throttle'; as?: DynamodbThrottling }
  | { kind: 'conflict' }
  | { kind: 'lag'; hide: (item: WireItem) => boolean };

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

export type RandomFaultKind = 'reset_before' | 'reset_after' | 'stall' | 'delay' | 'throttle';

export interface RandomFaults {
  seed: number;
  /** Probability of each fault per request; the sum must stay under 1. */
  rates: Partial<Record<RandomFaultKind, number>>;
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
const emptyFaults = (): Record<FaultKind, number> => ({
  reset_before: 0,
  reset_after: 0,
  stall: 0,
  delay: 0,
  hold: 0,
  outage: 0,
  throttle: 0,
  conflict: 0,
  lag: 0,
});

interface ActiveRule {
  spec: RuleSpec;
  matches: number;
  fired: number;
  released: boolean;
  release: () => void;
  releasedPromise: Promise<void>;
  onHit: (request: ProxiedRequest) => void;
}

type Decision =
  | { kind: 'pass' }
  | { kind: 'reset_before' }
  | { kind: 'reset_after' }
  | { kind: 'stall'; ms: number }
  | { kind: 'delay'; ms: number }
  | { kind: 'hold'; until: Promise<void> }
  | { kind: 'outage' }
  | { kind: 'throttle'; as?: DynamodbThrottling }
  | { kind: 'conflict' }
  | { kind: 'lag'; hide: (item: WireItem) => boolean };

/** `upstream`: the backend's URL, or where to read it at each connection (a server that listens after the proxy's clients are configured). */
export async function startFaultProxy(upstream: string | (() => string)): Promise<FaultProxy> {
  const upstreamOf = () => new URL(typeof upstream === 'string' ? upstream : upstream());
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
      for (const kind of ['reset_before', 'reset_after', 'stall', 'delay', 'throttle'] as const) {
        threshold += random.spec.rates[kind] ?? 0;
        if (draw >= threshold) continue;
        if (kind === 'stall') return { kind, ms: random.spec.stallMs };
        if (kind === 'throttle') return { kind, as: throttlingOf(request, magnitude) };
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
        const target = upstreamOf();
        const socket = track(connect(Number(target.port), target.hostname));
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
      if (decision.kind === 'throttle') return void client.write(throttledAnswer(request, decision.as));
      if (decision.kind === 'conflict') return void client.write(conflictAnswer(request));
      if (decision.kind === 'delay') await sleep(decision.ms);
      if (decision.kind === 'hold') await decision.until;
      if (client.destroyed) return upstreamSocket?.destroy();
      const answer = await exchange(raw, request.method);
      if (answer === undefined || decision.kind === 'reset_after') return reset();
      if (decision.kind === 'stall') await sleep(decision.ms);
      if (client.destroyed) return upstreamSocket?.destroy();
      client.write(decision.kind === 'lag' ? laggingAnswer(answer, decision.hide) : answer);
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

/**
 * A throttled DynamoDB answers with one of its three forms: a transaction
 * mostly as a cancellation for ThrottlingError (the form the SDK does not
 * retry), else either exception, as `draw` (0 to 1) picks.
 */
function throttlingOf(request: ProxiedRequest, draw: number): DynamodbThrottling {
  if (request.target === `${DYNAMODB_PREFIX}TransactWriteItems` && draw < 0.5) return 'TransactionCanceledException';
  return draw < 0.75 ? 'ProvisionedThroughputExceededException' : 'ThrottlingException';
}

const DYNAMODB_PREFIX = 'DynamoDB_20120810.';

/**
 * The bodies DynamoDB sends when it throttles (Amazon DynamoDB Developer
 * Guide, "Error handling with DynamoDB": the error's JSON with its __type
 * and message, HTTP 400; the TransactWriteItems API reference: a
 * TransactionCanceledException with one CancellationReason per item, in
 * order, ThrottlingError where throughput ran out and None elsewhere).
 */
const DYNAMODB_THROTTLING_BODIES: Record<Exclude<DynamodbThrottling, 'TransactionCanceledException'>, object> = {
  ProvisionedThroughputExceededException: {
    __type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
    message:
      'You exceeded your maximum allowed provisioned throughput for a table or for one or more global secondary indexes. To view performance metrics for provisioned throughput vs. consumed throughput, open the Amazon CloudWatch console.',
  },
  ThrottlingException: {
    __type: 'com.amazon.coral.availability#ThrottlingException',
    message: 'Rate of requests exceeds the allowed throughput.',
  },
};

const THROTTLING_REASON_MESSAGE =
  'Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly. If exceptions persist, check if you have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html.';

/** The whole HTTP answer of a throttled backend to `request`: DynamoDB's (400, JSON) or S3's (503 SlowDown, XML). */
export function throttledAnswer(request: ProxiedRequest, as?: DynamodbThrottling): Buffer {
  const requestId = randomBytes(8).toString('hex').toUpperCase();
  if (request.target === undefined) {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>${requestId}</RequestId><HostId>${randomBytes(24).toString('base64')}</HostId></Error>`;
    return httpAnswer(
      '503 Slow Down',
      { 'x-amz-request-id': requestId, 'content-type': 'application/xml' },
      request.method === 'HEAD' ? '' : xml,
    );
  }
  const isTransaction = request.target === `${DYNAMODB_PREFIX}TransactWriteItems`;
  const form = as ?? (isTransaction ? 'TransactionCanceledException' : 'ProvisionedThroughputExceededException');
  let body: object;
  if (form === 'TransactionCanceledException') {
    const items: unknown[] = isTransaction
      ? (JSON.parse(request.body.toString('utf8')) as { TransactItems: unknown[] }).TransactItems
      : [undefined];
    // The last item ran out of throughput (a feed's items come last); the others would have gone through.
    const reasons = items.map((_, index) =>
      index === items.length - 1 ? { Code: 'ThrottlingError', Message: THROTTLING_REASON_MESSAGE } : { Code: 'None' },
    );
    body = {
      __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
      CancellationReasons: reasons,
      Message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((reason) => reason.Code).join(', ')}]`,
    };
  } else body = DYNAMODB_THROTTLING_BODIES[form];
  return httpAnswer(
    '400 Bad Request',
    { 'x-amzn-requestid': requestId, 'content-type': 'application/x-amz-json-1.0' },
    JSON.stringify(body),
  );
}

/** DynamoDB's answer to a TransactWriteItems whose items another transaction holds: cancelled, TransactionConflict on the first. */
export function conflictAnswer(request: ProxiedRequest): Buffer {
  const items = (JSON.parse(request.body.toString('utf8')) as { TransactItems: unknown[] }).TransactItems;
  const reasons = items.map((_, index) =>
    index === 0 ? { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' } : { Code: 'None' },
  );
  const body = {
    __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
    CancellationReasons: reasons,
    Message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((reason) => reason.Code).join(', ')}]`,
  };
  return httpAnswer(
    '400 Bad Request',
    { 'x-amzn-requestid': randomBytes(8).toString('hex').toUpperCase(), 'content-type': 'application/x-amz-json-1.0' },
    JSON.stringify(body),
  );
}

/** A Query's answer without the items `hide` picks (and its Count less them); any other answer as it is. */
function laggingAnswer(answer: Buffer, hide: (item: WireItem) => boolean): Buffer {
  const head = parseHead(answer);
  if (!head?.startLine.includes(' 200 ') || head.headers['content-length'] === undefined) return answer;
  const body = JSON.parse(answer.subarray(head.length).toString('utf8')) as { Items?: WireItem[]; Count?: number };
  const items = (body.Items ?? []).filter((item) => !hide(item));
  const lagging = { ...body, Items: items, Count: items.length };
  // DynamoDB's checksum of the body would no longer match: dropped (the SDK does not check it).
  const headers = Object.fromEntries(
    Object.entries(head.headers).filter(([name]) => !['content-length', 'x-amz-crc32', 'date'].includes(name)),
  );
  return httpAnswer(head.startLine.slice(head.startLine.indexOf(' ') + 1), headers, JSON.stringify(lagging));
}

function httpAnswer(status: string, headers: Record<string, string>, body: string): Buffer {
  const bytes = Buffer.from(body, 'utf8');
  const head = Object.entries({ ...headers, 'content-length': String(bytes.length), date: new Date().toUTCString() }).map(
    ([name, value]) => `${name}: ${value}\r\n`,
  );
  return Buffer.concat([Buffer.from(`HTTP/1.1 ${status}\r\n${head.join('')}\r\n`, 'latin1'), bytes]);
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

export const isStreamRead = (request: ProxiedRequest): boolean => (request.target ?? '').startsWith('DynamoDBStreams_20120810.');

/** A request signed by the local function `name`: each signs with a key of its own (infra/local/iam.ts). */
export const signedBy =
  (name: string) =>
  (request: ProxiedRequest): boolean =>
    (request.headers.authorization ?? '').includes(
      `Credential=${functionKeyId({ accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? 'local' }, name)}/`,
    );

/** Every matching request is cut, before the backend sees it or after it answered (the answer lost), until the proxy is calmed. */
export const cutEvery = (proxy: FaultProxy, match: (request: ProxiedRequest) => boolean, when: 'before' | 'after' = 'before'): Rule =>
  proxy.inject({ match, times: Number.POSITIVE_INFINITY, fault: { kind: when === 'after' ? 'reset_after' : 'reset_before' } });
