import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PolicyEvaluator } from '../../infra/local/iam.js';
import { type LocalQueue, localSqs, MAX_DELAY_SECONDS, startLocalQueue } from '../../infra/local/queue.js';
import { QueueRefused, SqsQueue } from '../../shared/sqs.js';
import { eventually } from '../support/eventually.js';

/**
 * The local queues' stand-in (infra/local/queue.ts) over HTTP, as the
 * fan-out's SqsQueue sends to it: a message sent with DelaySeconds is
 * delivered no sooner than its delay, as SQS holds it; a delay past SQS's
 * 900 s is refused, as SQS refuses it; each message reaches the queue its
 * QueueUrl names. Sent with the server's base key (the local IAM's checks of
 * a function's key: local-iam.test.ts, and the grants every lane uses).
 */
const BASE = { accessKeyId: 'local', secretAccessKey: 'local' };
const delivered = new Map<string, SQSRecord[]>();
let server: Server;
let queues: LocalQueue[];
let url: string;

beforeAll(async () => {
  server = createServer();
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  queues = ['first', 'second'].map((name) => {
    delivered.set(name, []);
    return startLocalQueue({
      name,
      region: 'us-east-1',
      account: '000000000000',
      url: `${url}/000000000000/${name}`,
      iam: {} as PolicyEvaluator,
      baseKeyId: BASE.accessKeyId,
      handler: async (event) => {
        delivered.get(name)!.push(...event.Records);
        return { batchItemFailures: [] };
      },
      batchSize: 10,
      maxDeliveries: 3,
      visibilityMs: 60_000,
      functionTimeoutMs: 5_000,
    });
  });
  const sqs = localSqs(queues);
  server.on('request', (request, response) => {
    if (!sqs.handleRequest(request, response)) response.writeHead(404).end();
  });
});
afterAll(async () => {
  await Promise.all(queues.map((queue) => queue.stop()));
  await new Promise((closed) => server.close(closed));
});

const sender = (name: string) => new SqsQueue(`${url}/000000000000/${name}`, 'us-east-1', BASE);
const bodies = (name: string) => delivered.get(name)!.map((record) => record.body);

describe('the local queue', () => {
  it('delivers a message sent with DelaySeconds no sooner than its delay, and one without at once, each to the queue its QueueUrl names', async () => {
    await sender('first').send([{ body: 'later', delaySeconds: 2 }, { body: 'now' }]);
    await sender('second').send([{ body: 'elsewhere' }]);
    await eventually(
      async () => queues.map((queue) => queue.depth),
      (depths) => depths.every((depth) => depth === 0),
    );
    const records = delivered.get('first')!;
    expect(records.map((record) => record.body)).toEqual(['now', 'later']);
    const later = records.find((record) => record.body === 'later')!;
    const waited = Number(later.attributes.ApproximateFirstReceiveTimestamp) - Number(later.attributes.SentTimestamp);
    expect(waited).toBeGreaterThanOrEqual(2_000);
    expect(bodies('second')).toEqual(['elsewhere']);
  });

  it(`refuses a delay past SQS's ${MAX_DELAY_SECONDS} s (or not a whole number of seconds) as SQS does, taking no message of the batch`, async () => {
    for (const delaySeconds of [MAX_DELAY_SECONDS + 1, -1, 1.5]) {
      const refused = await sender('second')
        .send([{ body: 'fine' }, { body: 'too late', delaySeconds }])
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(refused).toBeInstanceOf(QueueRefused);
      expect(String(refused)).toMatch(/InvalidParameterValue.*DelaySeconds is invalid/);
    }
    await sender('second').send([{ body: 'longest', delaySeconds: MAX_DELAY_SECONDS }]);
    // Every send above was answered before this one: a refused batch would be in the queue by now.
    expect(queues[1]!.depth).toBe(1);
    expect(bodies('second')).toEqual(['elsewhere']);
  });

  it('answers a QueueUrl no queue has as SQS does', async () => {
    const refused = await sender('missing')
      .send([{ body: 'lost' }])
      .catch((error: unknown) => error);
    expect(String(refused)).toMatch(/QueueDoesNotExist/);
  });
});
