import type { APIGatewayProxyEvent, DynamoDBRecord } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Composition } from '../../shared/app.js';
import { httpPipeline } from '../../shared/http/handler.js';
import { created, ok } from '../../shared/http/response.js';
import type { IdempotencyStore } from '../../shared/idempotency/model.js';
import { IdempotencyService } from '../../shared/idempotency/service.js';
import { logger } from '../../shared/observability.js';
import { eachInOrder, streamConsumer } from '../../shared/stream-consumer.js';

type Line = Record<string, unknown>;

/**
 * What the logger prints, as parsed JSON lines. Powertools writes to the
 * global console in dev mode (the test settings) and to stdout/stderr
 * otherwise: both are read, and nothing is printed.
 */
let printed: string[] = [];
beforeEach(() => {
  printed = [];
  const keep = (text: unknown) => {
    printed.push(String(text));
    return true;
  };
  for (const method of ['debug', 'info', 'warn', 'error', 'log'] as const) vi.spyOn(console, method).mockImplementation(keep);
  vi.spyOn(process.stdout, 'write').mockImplementation(keep);
  vi.spyOn(process.stderr, 'write').mockImplementation(keep);
});
afterEach(() => vi.restoreAllMocks());

const lines = (): Line[] =>
  printed.flatMap((text) => {
    try {
      const parsed: unknown = JSON.parse(text);
      return typeof parsed === 'object' && parsed !== null ? [parsed as Line] : [];
    } catch {
      return [];
    }
  });
const linesSaying = (message: string) => lines().filter((line) => line.message === message);

const event = (requestId: string, userId: string, headers: Record<string, string> = {}) =>
  ({
    resource: '/v1/notes',
    httpMethod: 'POST',
    headers,
    body: null,
    isBase64Encoded: false,
    requestContext: { requestId, authorizer: { principalId: userId } },
  }) as unknown as APIGatewayProxyEvent;

/** Keys claimed and released as asked; storing an answer fails, which the service logs as a warning. */
const storeThatCannotKeep = (): IdempotencyStore => ({
  claim: async (claim) => ({ claimed: true, seed: claim.seed }),
  get: async () => undefined,
  complete: async () => {
    throw new Error('idempotency table unavailable');
  },
  release: async () => undefined,
});

const httpHandler = httpPipeline({
  composition: () => ({ config: { corsOrigins: [] } }),
  idempotency: () => new IdempotencyService(storeThatCannotKeep()),
});

describe('the log lines of a request', () => {
  it("carry the request's id, its function and its caller, on a service's warning too", async () => {
    const handler = httpHandler({ name: 'CreateNote', idempotent: true }, { input: () => ({}), run: async () => created({ id: 'n1' }) });
    const result = await handler(event('req-service-warning', 'user_a', { 'idempotency-key': 'k1' }));
    expect(result.statusCode).toBe(201);
    expect(linesSaying('idempotency record not stored')).toEqual([
      expect.objectContaining({ level: 'WARN', request_id: 'req-service-warning', function: 'CreateNote', user_id: 'user_a' }),
    ]);
  });

  it('give an error as its name, message and stack (and cause), none of its other fields', async () => {
    const failure = Object.assign(new TypeError('lost the thread', { cause: new RangeError('under it') }), {
      Item: { file_name: 'private.txt' },
    });
    const handler = httpHandler({ name: 'GetNote' }, async () => {
      throw failure;
    });
    expect((await handler(event('req-failed', 'user_a'))).statusCode).toBe(500);
    const [line] = linesSaying('request failed');
    expect(line).toMatchObject({ level: 'ERROR', request_id: 'req-failed', function: 'GetNote' });
    expect(line!.error).toEqual({
      name: 'TypeError',
      message: 'lost the thread',
      stack: expect.stringContaining('TypeError: lost the thread'),
      cause: { name: 'RangeError', message: 'under it', stack: expect.stringContaining('RangeError: under it') },
    });
    expect(JSON.stringify(lines())).not.toContain('private.txt');
  });

  it("never carry an earlier request's keys: not the next request's lines, nor a line outside any request", async () => {
    const handler = httpHandler({ name: 'GetNote' }, async (request) => {
      logger.warn('note read', { note: request.caller.requestId });
      return ok({});
    });
    await handler(event('req-first', 'user_first'));
    await handler(event('req-second', 'user_second'));
    logger.warn('between invocations');
    expect(linesSaying('note read')).toEqual([
      expect.objectContaining({ request_id: 'req-first', user_id: 'user_first' }),
      expect.objectContaining({ request_id: 'req-second', user_id: 'user_second' }),
    ]);
    const [outside] = linesSaying('between invocations');
    expect(outside).toBeDefined();
    expect(outside).not.toHaveProperty('request_id');
    expect(outside).not.toHaveProperty('function');
    expect(outside).not.toHaveProperty('user_id');
  });

  it('stay with their own request when requests run at once (the local server runs them in one process)', async () => {
    const gates = new Map<string, () => void>();
    const handler = httpHandler({ name: 'GetNote' }, async (request) => {
      await new Promise<void>((resolve) => gates.set(request.caller.requestId, resolve));
      logger.warn('note read', { note: request.caller.requestId });
      return ok({});
    });
    const first = handler(event('req-a', 'user_a'));
    const second = handler(event('req-b', 'user_b'));
    await vi.waitFor(() => expect(gates.size).toBe(2));
    gates.get('req-b')!();
    gates.get('req-a')!();
    await Promise.all([first, second]);
    const read = linesSaying('note read');
    expect(read).toHaveLength(2);
    for (const line of read) expect(line.request_id).toBe(line.note);
    expect(read.find((line) => line.request_id === 'req-a')).toMatchObject({ user_id: 'user_a' });
  });
});

describe("a stream consumer's log lines", () => {
  const record = (sequence: string): DynamoDBRecord => ({ eventID: `event-${sequence}`, dynamodb: { SequenceNumber: sequence } });
  const batch = ['100', '200', '300'].map(record);
  const composition = {} as Composition;

  it("carry the function and the batch's record ids; a record's own lines carry that record's id and sequence number", async () => {
    const consumer = streamConsumer('Tidy', (event) =>
      eachInOrder(event.Records, async (r) => {
        logger.warn('record tidied');
        if (r.dynamodb?.SequenceNumber === '300') throw new Error('bucket unavailable');
      }),
    );
    expect(await consumer.withComposition(composition)({ Records: batch })).toEqual({ batchItemFailures: [{ itemIdentifier: '300' }] });
    expect(linesSaying('record tidied')).toEqual(
      ['100', '200', '300'].map((sequence) =>
        expect.objectContaining({ function: 'Tidy', event_id: `event-${sequence}`, sequence_number: sequence }),
      ),
    );
    for (const line of linesSaying('record tidied')) expect(line).not.toHaveProperty('event_ids');
    const [stopped] = linesSaying('stream batch stopped; the rest is retried from the record it stopped at');
    expect(stopped).toMatchObject({ function: 'Tidy', event_ids: ['event-100', 'event-200', 'event-300'], event_id: 'event-300' });
    expect(stopped!.error).toMatchObject({ name: 'Error', message: 'bucket unavailable', stack: expect.any(String) });
  });

  it('say why a batch failed whole, with its record ids, and keep none of them for the next batch', async () => {
    const error = new Error('table unavailable');
    const consumer = streamConsumer('Tidy', async () => {
      throw error;
    });
    await expect(consumer.withComposition(composition)({ Records: batch.slice(0, 2) })).rejects.toBe(error);
    logger.warn('between batches');
    const [failed] = linesSaying('stream batch failed; it is retried whole');
    expect(failed).toMatchObject({ level: 'ERROR', function: 'Tidy', event_ids: ['event-100', 'event-200'] });
    expect(failed!.error).toMatchObject({ name: 'Error', message: 'table unavailable' });
    expect(linesSaying('between batches')[0]).not.toHaveProperty('event_ids');
  });
});
