import { Agent, createServer, type IncomingMessage, request, type Server } from 'node:http';
import { connect } from 'node:net';
import { DynamoDBClient, GetItemCommand, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { isThrottlingError } from '@smithy/core/retry';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { busyOf } from '../../../shared/dynamo/busy-retry.js';
import { type FaultProxy, startFaultProxy } from '../../support/fault-proxy.js';
import { messageLength } from '../../support/http-framing.js';

/** The backend: echoes what it received and counts requests and connections. */
let backend: Server;
let backendUrl: string;
let received: { method: string; path: string; body: string }[] = [];
let connections = 0;
let proxy: FaultProxy;
let agent: Agent;

beforeAll(async () => {
  backend = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      received.push({ method: req.method!, path: req.url!, body });
      if (req.url === '/chunked') {
        res.write('first,');
        res.end('second');
      } else if (req.url === '/empty') {
        res.writeHead(204).end();
      } else {
        res.setHeader('content-type', 'text/plain');
        res.end(`${req.method} ${req.url} ${body}`);
      }
    });
  });
  backend.on('connection', () => (connections += 1));
  await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', () => resolve()));
  backendUrl = `http://127.0.0.1:${(backend.address() as { port: number }).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => backend.close(() => resolve()));
});
beforeEach(async () => {
  received = [];
  connections = 0;
  proxy = await startFaultProxy(backendUrl);
  agent = new Agent({ keepAlive: true, maxSockets: 1 });
});
afterEach(async () => {
  agent.destroy();
  await proxy.close();
});

interface Answer {
  status: number;
  body: string;
  socketReused: boolean;
}

function call(
  path: string,
  init: { method?: string; body?: string; headers?: Record<string, string>; chunked?: boolean; timeoutMs?: number } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${proxy.endpoint}${path}`, {
      method: init.method ?? 'GET',
      agent,
      headers: init.headers,
      timeout: init.timeoutMs,
    });
    req.on('timeout', () => req.destroy(new Error('client timeout')));
    req.on('error', reject);
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString(), socketReused: req.reusedSocket }));
    });
    if (init.chunked && init.body) {
      // Two writes without a content-length: Node frames them as chunks.
      req.write(init.body.slice(0, 3));
      req.end(init.body.slice(3));
    } else {
      req.end(init.body);
    }
  });
}

const errorCode = (promise: Promise<unknown>) =>
  promise.then(
    () => 'answered',
    (error: NodeJS.ErrnoException) => error.code ?? error.message,
  );

describe('fault proxy: passing through', () => {
  it('forwards several requests of one keep-alive connection, each with its own answer', async () => {
    const first = await call('/one', { method: 'POST', body: 'a=1' });
    const second = await call('/two', { method: 'PUT', body: 'b=2' });
    const third = await call('/three');
    expect([first.body, second.body, third.body]).toEqual(['POST /one a=1', 'PUT /two b=2', 'GET /three ']);
    expect([second.socketReused, third.socketReused]).toEqual([true, true]);
    expect(connections).toBe(1);
    expect(proxy.stats().requests).toBe(3);
  });

  it('forwards chunked request bodies and chunked and empty answers whole', async () => {
    expect((await call('/echo', { method: 'POST', body: 'chunked body', chunked: true })).body).toBe('POST /echo chunked body');
    expect((await call('/chunked')).body).toBe('first,second');
    expect((await call('/empty', { method: 'DELETE' })).status).toBe(204);
    expect((await call('/after')).body).toBe('GET /after ');
    expect((await call('/after')).socketReused).toBe(true);
  });

  it('answers Expect: 100-continue itself, then forwards the body the client sends after it', async () => {
    const socket = connect(Number(new URL(proxy.endpoint).port), '127.0.0.1');
    let seen = '';
    socket.on('data', (chunk: Buffer) => (seen += chunk.toString()));
    const until = async (text: string) => {
      while (!seen.includes(text)) await new Promise((resolve) => setTimeout(resolve, 5));
    };
    socket.write('PUT /continue HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 9\r\n\r\n');
    // The body is only sent once the interim answer came, as a waiting client does.
    await until('HTTP/1.1 100 Continue\r\n\r\n');
    expect(received).toEqual([]);
    socket.write('late body');
    await until('PUT /continue late body');
    socket.destroy();
    expect(seen).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
  });
});

describe('fault proxy: faults', () => {
  it('resets before forwarding: the backend never sees the request', async () => {
    const rule = proxy.inject({ match: (r) => r.path === '/doomed', fault: { kind: 'reset_before' } });
    expect(await errorCode(call('/doomed', { method: 'POST', body: 'x' }))).toBe('ECONNRESET');
    expect(received).toEqual([]);
    expect(rule.fired).toBe(1);
    expect((await rule.hit).path).toBe('/doomed');
    // Only the first match: the same request again passes.
    expect((await call('/doomed', { method: 'POST', body: 'x' })).body).toBe('POST /doomed x');
  });

  it('resets after the backend answered: the work is done, the answer is lost', async () => {
    proxy.inject({ match: (r) => r.method === 'DELETE', fault: { kind: 'reset_after' } });
    expect(await errorCode(call('/thing', { method: 'DELETE' }))).toBe('ECONNRESET');
    expect(received).toEqual([{ method: 'DELETE', path: '/thing', body: '' }]);
    expect(proxy.stats().faults.reset_after).toBe(1);
  });

  it('hits exactly the nth matching request of a persistent connection', async () => {
    proxy.inject({ match: (r) => r.headers['x-amz-target'] === 'Op.Write', nth: 2, fault: { kind: 'reset_before' } });
    const write = { method: 'POST', headers: { 'x-amz-target': 'Op.Write' } };
    expect((await call('/w1', { ...write, body: '1' })).status).toBe(200);
    expect((await call('/read')).status).toBe(200);
    expect(await errorCode(call('/w2', { ...write, body: '2' }))).toBe('ECONNRESET');
    expect((await call('/w3', { ...write, body: '3' })).status).toBe(200);
    expect(received.map((r) => r.path)).toEqual(['/w1', '/read', '/w3']);
  });

  it('stalls an answer past the client timeout after the backend ran the request', async () => {
    proxy.inject({ match: () => true, fault: { kind: 'stall', ms: 1_000 } });
    expect(await errorCode(call('/slow', { method: 'POST', body: 'x', timeoutMs: 100 }))).toBe('client timeout');
    expect(received.map((r) => r.path)).toEqual(['/slow']);
  });

  it('holds a request until the test releases it, then forwards it', async () => {
    const rule = proxy.inject({ match: (r) => r.path === '/held', fault: { kind: 'hold' } });
    const answer = call('/held', { method: 'POST', body: 'x' });
    await rule.hit;
    // Another connection is not held up by it.
    const other = new Agent({ keepAlive: false });
    const side = await new Promise<number>((resolve, reject) =>
      request(`${proxy.endpoint}/side`, { agent: other }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      })
        .on('error', reject)
        .end(),
    );
    expect(side).toBe(200);
    expect(received.map((r) => r.path)).toEqual(['/side']);
    rule.release();
    expect((await answer).body).toBe('POST /held x');
  });

  it('delays a request before the backend sees it', async () => {
    proxy.inject({ match: () => true, fault: { kind: 'delay', ms: 300 } });
    const answer = call('/late', { method: 'POST', body: 'x' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(received).toEqual([]);
    expect((await answer).body).toBe('POST /late x');
  });

  it('refuses everything during an outage and passes again after it', async () => {
    proxy.down();
    expect(await errorCode(call('/a'))).toBe('ECONNRESET');
    const raw = connect(Number(new URL(proxy.endpoint).port), '127.0.0.1');
    expect(
      await new Promise((resolve) =>
        raw.on('error', (error: NodeJS.ErrnoException) => resolve(error.code)).on('close', () => resolve('closed')),
      ),
    ).toMatch(/ECONNRESET|closed/);
    expect(received).toEqual([]);
    proxy.up();
    expect((await call('/b')).body).toBe('GET /b ');
    expect(proxy.stats().faults.outage).toBeGreaterThanOrEqual(1);
  });

  it('draws random faults from a seed: the same seed makes the same choices', async () => {
    const outcomes = async (seed: number) => {
      proxy.randomize({ seed, rates: { reset_before: 0.3, reset_after: 0.2 }, stallMs: 0, delayMs: [0, 0] });
      const results: string[] = [];
      for (let i = 0; i < 40; i += 1) results.push(await errorCode(call(`/r${i}`, { method: 'POST', body: String(i) })));
      proxy.randomize(undefined);
      return results;
    };
    const first = await outcomes(7);
    received = [];
    const again = await outcomes(7);
    expect(again).toEqual(first);
    expect(first.filter((r) => r === 'ECONNRESET').length).toBeGreaterThan(5);
    expect(first.filter((r) => r === 'answered').length).toBeGreaterThan(5);
    // reset_after ran at the backend although the client saw a reset: more requests arrived than answered.
    expect(received.length).toBeGreaterThan(first.filter((r) => r === 'answered').length);
  });

  it('calm() releases held requests and drops every rule', async () => {
    proxy.inject({ match: () => true, fault: { kind: 'hold' } });
    const answer = call('/held');
    await new Promise((resolve) => setTimeout(resolve, 50));
    proxy.calm();
    expect((await answer).status).toBe(200);
    expect((await call('/free')).status).toBe(200);
  });
});

describe('HTTP message framing', () => {
  const messages = [
    Buffer.from('POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello'),
    Buffer.from('POST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: t\r\n\r\n'),
    Buffer.from('GET /c HTTP/1.1\r\nHost: x\r\n\r\n'),
  ];

  it('finds where each request ends, however the bytes of a keep-alive stream are split (property)', () => {
    const stream = Buffer.concat(messages);
    const ends = [messages[0]!.length, messages[0]!.length + messages[1]!.length, stream.length];
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 16 }), { minLength: 1, maxLength: 60 }), (steps) => {
        const found: number[] = [];
        let buffered = Buffer.alloc(0);
        let consumed = 0;
        for (let at = 0, i = 0; at < stream.length; i += 1) {
          const step = steps[i % steps.length]!;
          buffered = Buffer.concat([buffered, stream.subarray(at, at + step)]);
          at += step;
          for (
            let length = messageLength(buffered, { kind: 'request' });
            length !== undefined && buffered.length > 0;
            length = messageLength(buffered, { kind: 'request' })
          ) {
            consumed += length;
            found.push(consumed);
            buffered = buffered.subarray(length);
          }
        }
        expect(found).toEqual(ends);
      }),
      { seed: 42, numRuns: 300 },
    );
  });

  it('frames any body by Content-Length or by chunks, and never ends a message early (property)', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 300 }),
        fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 8 }),
        (body, chunkSizes) => {
          const bytes = Buffer.from(body);
          const framed = Buffer.concat([Buffer.from(`PUT /x HTTP/1.1\r\nContent-Length: ${bytes.length}\r\n\r\n`), bytes]);
          const chunks: Buffer[] = [Buffer.from('PUT /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n')];
          for (let at = 0, i = 0; at < bytes.length; i += 1) {
            const piece = bytes.subarray(at, at + chunkSizes[i % chunkSizes.length]!);
            chunks.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n'));
            at += piece.length;
          }
          const chunked = Buffer.concat([...chunks, Buffer.from('0\r\n\r\n')]);
          for (const message of [framed, chunked]) {
            expect(messageLength(message, { kind: 'request' })).toBe(message.length);
            expect(messageLength(message.subarray(0, message.length - 1), { kind: 'request' })).toBeUndefined();
          }
        },
      ),
      { seed: 42, numRuns: 300 },
    );
  });

  it('ends a response without framing at the close, and a HEAD answer at its head', () => {
    const unframed = Buffer.from('HTTP/1.1 200 OK\r\n\r\nuntil close');
    expect(messageLength(unframed, { kind: 'response', requestMethod: 'GET', closed: false })).toBeUndefined();
    expect(messageLength(unframed, { kind: 'response', requestMethod: 'GET', closed: true })).toBe(unframed.length);
    const head = Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n');
    expect(messageLength(head, { kind: 'response', requestMethod: 'HEAD', closed: false })).toBe(head.length);
  });
});

describe('a throttle fault', () => {
  const dynamodbThrough = (endpoint: string) =>
    new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, maxAttempts: 1 });
  const transaction = new TransactWriteItemsCommand({
    TransactItems: [
      { Put: { TableName: 't', Item: { pk: { S: 'a' } } } },
      {
        Update: {
          TableName: 't',
          Key: { pk: { S: 'b' } },
          UpdateExpression: 'SET n = :n',
          ExpressionAttributeValues: { ':n': { N: '1' } },
        },
      },
    ],
  });

  it.each(['ProvisionedThroughputExceededException', 'ThrottlingException'] as const)(
    'answers DynamoDB as a throttled table does: the SDK reads %s, a throttling error it retries itself, and the backend never sees the request',
    async (as) => {
      proxy.inject({ match: () => true, fault: { kind: 'throttle', as } });
      const client = dynamodbThrough(proxy.endpoint);
      const failure = await client.send(new GetItemCommand({ TableName: 't', Key: { pk: { S: 'a' } } })).catch((error: unknown) => error);
      client.destroy();
      expect(failure).toMatchObject({ name: as, $metadata: { httpStatusCode: 400 } });
      expect(isThrottlingError(failure as never)).toBe(true);
      expect(received).toEqual([]);
      expect(proxy.stats().faults.throttle).toBe(1);
    },
  );

  it('answers a TransactWriteItems with a cancellation whose reasons say ThrottlingError, which the SDK does not retry', async () => {
    proxy.inject({ match: () => true, fault: { kind: 'throttle' } });
    const client = dynamodbThrough(proxy.endpoint);
    const failure = await client.send(transaction).catch((error: unknown) => error);
    client.destroy();
    expect(failure).toMatchObject({
      name: 'TransactionCanceledException',
      CancellationReasons: [{ Code: 'None' }, { Code: 'ThrottlingError' }],
    });
    expect(isThrottlingError(failure as never)).toBe(false);
    expect(busyOf(failure)).toBe('throttling');
  });

  it("answers S3 with 503 SlowDown, S3's XML error", async () => {
    proxy.inject({ match: () => true, fault: { kind: 'throttle' } });
    const answer = await call('/bucket/key', { method: 'PUT', body: 'bytes' });
    expect(answer.status).toBe(503);
    expect(answer.body).toMatch(
      /^<\?xml version="1.0" encoding="UTF-8"\?>\n<Error><Code>SlowDown<\/Code><Message>Please reduce your request rate.<\/Message>/,
    );
    expect(received).toEqual([]);
    // The connection stays usable, as S3's does.
    expect((await call('/after')).status).toBe(200);
  });
});
