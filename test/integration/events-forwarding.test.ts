import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { type DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dynamo } from '../../shared/app.js';
import { feedHeadKey } from '../../shared/dynamo/keys.js';
import type { BusEnvelope } from '../../shared/events/bus.js';
import { eventId } from '../../shared/events/ids.js';
import { eventItem } from '../../shared/events/item.js';
import type { ApiEvent, EventType } from '../../shared/events/model.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { upload } from '../support/attachments.js';
import { eventually } from '../support/eventually.js';

/**
 * `npm start` with EVENTS_FORWARD_URL: each event item added to the events
 * table reaches a receiver as the operators' event bus delivers it, in
 * EventBridge's envelope, in order, retried until the receiver answers 2xx.
 * The items are written straight into the table, as the API's writes store
 * them (pk the user, sk `e#` + sequence, the event as JSON text), so this
 * proves the forwarding alone.
 */

/** What a receiver on loopback was sent: every attempt, with what it answered (0: the connection was cut). */
interface Attempt {
  envelope: BusEnvelope;
  status: number;
}

/** A receiver on loopback whose answers the test decides, one port for its whole life (it may go down and come back). */
class Receiver {
  attempts: Attempt[] = [];
  /** What the next requests are answered: a status, or `cut` (the connection reset with no answer); then 200. */
  script: (number | 'cut')[] = [];
  private server?: Server;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((request, response) => void this.answer(request, response));
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server!.address() as AddressInfo).port;
  }

  /** Down: the port refuses connections until start() again. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }

  /**
   * Down until start() again, and counting what reached it: every connection
   * to the port is reset as it arrives, before a byte is read.
   */
  async down(): Promise<{ readonly connections: number; close(): Promise<void> }> {
    await this.stop();
    let connections = 0;
    const dead = createNetServer((socket) => {
      connections += 1;
      socket.resetAndDestroy();
    });
    await new Promise<void>((resolve) => dead.listen(this.port, '127.0.0.1', resolve));
    return {
      get connections() {
        return connections;
      },
      close: () => new Promise<void>((resolve) => dead.close(() => resolve())),
    };
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/operator-events`;
  }

  /** The envelopes of a user, in the order they were acknowledged with a 2xx. */
  deliveredTo(userId: string): BusEnvelope[] {
    return this.attempts.filter((a) => a.status >= 200 && a.status < 300 && a.envelope.detail.user_id === userId).map((a) => a.envelope);
  }

  attemptsFor(userId: string): Attempt[] {
    return this.attempts.filter((a) => a.envelope.detail.user_id === userId);
  }

  private async answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    expect(request.method).toBe('POST');
    expect(request.headers['content-type']).toBe('application/json');
    const envelope = JSON.parse(Buffer.concat(chunks).toString('utf8')) as BusEnvelope;
    const next = this.script.shift() ?? 200;
    this.attempts.push({ envelope, status: next === 'cut' ? 0 : next });
    if (next === 'cut') request.socket.destroy();
    else response.writeHead(next, { 'content-type': 'text/plain' }).end(next < 300 ? 'ok' : 'failing');
  }
}

let receiver: Receiver;
let t: TestApi;
let documents: DynamoDBDocumentClient;
const run = randomBytes(4).toString('hex');

beforeAll(async () => {
  receiver = new Receiver();
  await receiver.start();
  t = await startTestApi({ env: { EVENTS_FORWARD_URL: receiver.url } });
  documents = t.api.composition.use(dynamo);
});
afterAll(async () => {
  await t?.close();
  await receiver?.stop();
});

/** The user's next event item and its counter, as the outbox writes them (shared/events/item.ts): the event as the API shows it, stored as JSON text. */
async function appendEvent(userId: string, sequence: number, type: EventType, object: Record<string, unknown>): Promise<ApiEvent> {
  const event: ApiEvent = {
    id: eventId(sequence),
    type,
    created_at: Math.floor(Date.now() / 1000),
    data: { object },
    request_id: `req_${run}_${sequence}`,
  };
  const table = t.api.config.eventsTable;
  await documents.send(new PutCommand({ TableName: table, Item: eventItem({ user: userId, group: null }, sequence, event) }));
  // The counter item (an INSERT for the first event, a MODIFY after): never an entry on the bus.
  await documents.send(
    new UpdateCommand({
      TableName: table,
      Key: feedHeadKey(userId),
      UpdateExpression: 'SET seq = :n',
      ExpressionAttributeValues: { ':n': sequence },
    }),
  );
  return event;
}

const user = (name: string) => `${name}_${run}`;
const ids = (envelopes: BusEnvelope[] | ApiEvent[]) => envelopes.map((e) => ('detail' in e ? e.detail.id : e.id));

describe('EVENTS_FORWARD_URL', () => {
  it("POSTs a new event item in EventBridge's envelope: source messaging-api, the one detail-type, detail the event plus user_id", async () => {
    const userId = user('forwarded');
    const object = {
      id: 'att_1',
      object: 'attachment',
      filename: 'Été "report".txt',
      size: 12,
      conversation_id: null,
      uploaded_by: userId,
    };
    const event = await appendEvent(userId, 1, 'attachment.created', object);

    const [envelope, ...more] = await eventually(
      async () => receiver.deliveredTo(userId),
      (delivered) => delivered.length >= 1,
    );
    expect(more).toEqual([]);
    expect(envelope).toEqual({
      version: '0',
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      'detail-type': 'Messaging API event',
      source: 'messaging-api',
      account: '000000000000',
      time: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/),
      region: t.api.config.region,
      resources: [],
      detail: { ...event, user_id: userId },
    });
    expect(Math.abs(Date.parse(envelope!.time) / 1000 - event.created_at)).toBeLessThan(3600);
  });

  it('retries an entry the receiver answers 500 until it answers 2xx, the same envelope each time, then the next ones in order', async () => {
    const userId = user('failing_receiver');
    receiver.script = [500, 503, 'cut', 500];
    const events: ApiEvent[] = [];
    for (const sequence of [1, 2, 3])
      events.push(await appendEvent(userId, sequence, 'conversation.updated', { id: `conv_${sequence}`, object: 'conversation' }));

    const delivered = await eventually(
      async () => receiver.deliveredTo(userId),
      (envelopes) => envelopes.length >= 3,
    );
    expect(ids(delivered)).toEqual(ids(events));
    const attempts = receiver.attemptsFor(userId);
    // The first entry was tried five times (four failures, then 200), with one envelope id; each later one once.
    expect(attempts.map((a) => a.status)).toEqual([500, 503, 0, 500, 200, 200, 200]);
    expect(new Set(attempts.slice(0, 5).map((a) => a.envelope.id)).size).toBe(1);
    expect(new Set(attempts.map((a) => a.envelope.id)).size).toBe(3);
  });

  it('holds the feed while the receiver is down, then delivers every entry once, in order, when it is back', async () => {
    const userId = user('down_receiver');
    // Reachable but failing first, so that the test knows the forwarder is retrying the first entry...
    receiver.script = ['cut', 'cut'];
    const events = [await appendEvent(userId, 1, 'conversation.created', { id: 'conv_a', object: 'conversation' })];
    await eventually(
      async () => receiver.attemptsFor(userId),
      (attempts) => attempts.length >= 2,
    );
    // ...then down (every connection reset) while more events are written, and tried there twice at least...
    const outage = await receiver.down();
    for (const sequence of [2, 3, 4])
      events.push(await appendEvent(userId, sequence, 'attachment.deleted', { id: `att_${sequence}`, deleted: true }));
    await eventually(
      async () => outage.connections,
      (connections) => connections >= 2,
    );
    // ...and back on the same URL.
    await outage.close();
    await receiver.start();

    const delivered = await eventually(
      async () => receiver.deliveredTo(userId),
      (envelopes) => envelopes.length >= 4,
    );
    expect(ids(delivered)).toEqual(ids(events));
    expect(delivered.map((e) => e.detail.type)).toEqual([
      'conversation.created',
      'attachment.deleted',
      'attachment.deleted',
      'attachment.deleted',
    ]);
    // Nothing twice: each entry was acknowledged once.
    expect(new Set(delivered.map((e) => e.id)).size).toBe(4);
  });
});

describe('a change made through the API', () => {
  it("reaches the receiver as the bus's entry of each event the feed shows: detail the event as GET /v1/events/:id shows it, plus user_id", async () => {
    const userId = user('api_change');
    const conversation = await t.call(userId, 'POST', '/v1/conversations', { form: { contact_id: `contact_${run}` } });
    expect(conversation.status).toBe(201);
    expect((await t.call(userId, 'PUT', `/v1/conversations/${conversation.body.id}`, { json: { is_pinned: true } })).status).toBe(200);
    // Two events in one transaction: attachment.created and the uploader's side's conversation.updated.
    const uploaded = await upload(
      t,
      userId,
      { bytes: 'forwarded', filename: 'bus.txt', type: 'text/plain' },
      { conversation_id: conversation.body.id },
    );
    expect(uploaded.status).toBe(201);

    const listed = await t.call(userId, 'GET', '/v1/events?limit=100');
    expect(listed.status).toBe(200);
    const feed = listed.body.data as ApiEvent[];
    expect(feed.map((event) => event.type).sort()).toEqual([
      'attachment.created',
      'conversation.created',
      'conversation.updated',
      'conversation.updated',
    ]);

    const delivered = await eventually(
      async () => receiver.deliveredTo(userId),
      (envelopes) => envelopes.length >= feed.length,
    );
    expect(ids(delivered).sort()).toEqual(ids(feed).sort());
    for (const envelope of delivered) {
      const shown = await t.call(userId, 'GET', `/v1/events/${envelope.detail.id}`);
      expect(shown.status).toBe(200);
      expect(envelope).toMatchObject({ version: '0', source: 'messaging-api', 'detail-type': 'Messaging API event', resources: [] });
      expect(envelope.detail).toEqual({ ...shown.body, user_id: userId });
    }

    // Nothing else of the user's was put, the counter item included: a later change is the next and only entry.
    const deleted = await t.call(userId, 'DELETE', `/v1/attachments/${uploaded.body.id}`);
    expect(deleted.status).toBe(200);
    const after = await eventually(
      async () => receiver.deliveredTo(userId),
      (envelopes) => envelopes.length > feed.length,
    );
    expect(after.map((envelope) => envelope.detail.type)).toEqual([
      ...delivered.map((envelope) => envelope.detail.type),
      'attachment.deleted',
    ]);
    expect(after.at(-1)!.detail).toEqual({ ...(await t.call(userId, 'GET', '/v1/events?limit=1')).body.data[0], user_id: userId });
  });
});

describe('a server whose receiver never answers', () => {
  it('stops without waiting for it: the stop ends the delivery it holds open', async () => {
    // A receiver that takes each request and never answers.
    const held: ServerResponse[] = [];
    const silent = createServer((_request, response) => void held.push(response));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const stalled = await startTestApi({ env: { EVENTS_FORWARD_URL: `http://127.0.0.1:${port}/nobody` } });
    let stopping: Promise<void> | undefined;
    try {
      // A real change: its event item is what the forwarder keeps trying to deliver.
      expect((await stalled.call('nobody', 'POST', '/v1/conversations', { form: { contact_id: 'someone' } })).status).toBe(201);
      await eventually(
        async () => held.length,
        (count) => count >= 1,
      );
      const open = held.at(-1)!;
      const dropped = new Promise<void>((resolve) => open.on('close', resolve));
      // Not waiting means ending: the forwarder retries an unanswered request forever, so a stop that waits for it never ends.
      const STOP_BOUND_MS = 60_000;
      stopping = stalled.close();
      await bounded(Promise.all([stopping, dropped]), STOP_BOUND_MS, 'the server stopping while its receiver holds a delivery');
      expect(open.writableEnded).toBe(false);
    } finally {
      // A stop that hangs is the failure reported above: not waited for again.
      if (!stopping) await stalled.close();
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  }, 90_000);
});

/** `work`, or a failure naming `what` once `withinMs` has passed without it. */
async function bounded<T>(work: Promise<T>, withinMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not done within ${withinMs} ms`)), withinMs);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
