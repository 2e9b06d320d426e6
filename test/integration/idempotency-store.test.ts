import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTables } from '../../infra/local/dynamodb.js';
import { KeyInUse, KeyReused } from '../../shared/domain-errors.js';
import { idempotencyTable } from '../../shared/dynamo/tables.js';
import { toApiError } from '../../shared/http/errors.js';
import { underIdempotencyKey } from '../../shared/http/idempotency.js';
import type { ApiRequest } from '../../shared/http/request.js';
import { DynamoIdempotencyStore } from '../../shared/idempotency/dynamo-store.js';
import { type Claim, IDEMPOTENCY_TTL_SECONDS } from '../../shared/idempotency/model.js';
import { IdempotencyService } from '../../shared/idempotency/service.js';
import { sharedDynamodb } from '../support/api.js';

/** The store and the service against the run's DynamoDB Local, with the clock in the test's hands. */
let client: DynamoDBClient;
let store: DynamoIdempotencyStore;
beforeAll(async () => {
  const { endpoint, tablePrefix } = sharedDynamodb();
  const table = `${tablePrefix}idempotency`;
  const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
  await ensureTables(endpoint, 'us-east-1', credentials, { [table]: idempotencyTable });
  client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials });
  store = new DynamoIdempotencyStore(DynamoDBDocumentClient.from(client), table);
});
afterAll(() => client.destroy());

const T0 = Date.UTC(2026, 0, 1);
const DAY_MS = IDEMPOTENCY_TTL_SECONDS * 1000;
const claimOf = (key: string, owner: string, nowMs: number, fingerprint = 'fp'): Claim => ({
  userId: 'user',
  key,
  fingerprint,
  owner,
  seed: `seed-of-${owner}`,
  nowMs,
  leaseMs: 60_000,
});
const created = { status: 201, body: { id: 'conv_1' } };
const claimed = (seed: string) => ({ claimed: true, seed });
const heldBy = (holder: Record<string, unknown>) => ({ claimed: false, holder: expect.objectContaining(holder) });

describe('the idempotency store', () => {
  it('keeps a completed response for 24 hours and forgets it after, although DynamoDB TTL has not run', async () => {
    const now = T0;
    expect(await store.claim(claimOf('expiry', 'first', now))).toEqual(claimed('seed-of-first'));
    await store.complete(claimOf('expiry', 'first', now), created);
    expect(await store.get('user', 'expiry', now + DAY_MS - 2_000)).toMatchObject({ state: 'completed', response: created });
    expect(await store.get('user', 'expiry', now + DAY_MS + 1_000)).toBeUndefined();
    // After expiry the key is free again, for any request, with a seed of its own.
    expect(await store.claim(claimOf('expiry', 'later', now + DAY_MS + 1_000, 'other'))).toEqual(claimed('seed-of-later'));
  });

  it('recognises its own claim when the same claim is sent again (the SDK retry of a claim whose answer was lost)', async () => {
    expect(await store.claim(claimOf('resent', 'me', T0))).toEqual(claimed('seed-of-me'));
    expect(await store.claim(claimOf('resent', 'me', T0))).toEqual(claimed('seed-of-me'));
    expect(await store.claim(claimOf('resent', 'someone-else', T0 + 10))).toEqual(heldBy({ state: 'in_progress', owner: 'me' }));
  });

  it('lets one of two claims of a key win, and shows the loser the winner', async () => {
    expect(await store.claim(claimOf('race', 'a', T0))).toEqual(claimed('seed-of-a'));
    expect(await store.claim(claimOf('race', 'b', T0 + 10))).toEqual(heldBy({ state: 'in_progress', owner: 'a' }));
  });

  it("lets a claim whose lease ran out be taken over with the key's first seed, and then ignores the old owner", async () => {
    expect(await store.claim(claimOf('lease', 'crashed', T0))).toEqual(claimed('seed-of-crashed'));
    expect(await store.claim(claimOf('lease', 'retry', T0 + 59_000))).toEqual(heldBy({ owner: 'crashed' }));
    expect(await store.claim(claimOf('lease', 'retry', T0 + 61_000))).toEqual(claimed('seed-of-crashed'));
    await store.complete(claimOf('lease', 'crashed', T0), { status: 201, body: { id: 'stale' } });
    expect(await store.get('user', 'lease', T0 + 61_000)).toMatchObject({ state: 'in_progress', owner: 'retry' });
  });

  it('never lets a different request take over a key whose lease ran out', async () => {
    expect(await store.claim(claimOf('lease-other', 'crashed', T0))).toEqual(claimed('seed-of-crashed'));
    expect(await store.claim(claimOf('lease-other', 'other', T0 + 61_000, 'another request'))).toEqual(heldBy({ fingerprint: 'fp' }));
  });

  it('releases a key only for the run that holds it, keeping its seed for the next run of the same request', async () => {
    expect(await store.claim(claimOf('release', 'one', T0))).toEqual(claimed('seed-of-one'));
    await store.release(claimOf('release', 'intruder', T0));
    expect(await store.get('user', 'release', T0)).toMatchObject({ state: 'in_progress', owner: 'one' });
    await store.release(claimOf('release', 'one', T0));
    expect(await store.get('user', 'release', T0)).toMatchObject({ state: 'released' });
    expect(await store.claim(claimOf('release', 'different', T0 + 5, 'another request'))).toEqual(heldBy({ state: 'released' }));
    expect(await store.claim(claimOf('release', 'two', T0 + 10))).toEqual(claimed('seed-of-one'));
  });
});

describe('a request whose key is held by a running request', () => {
  const request = (key: string): ApiRequest => ({
    event: { httpMethod: 'POST', resource: '/v1/conversations' } as APIGatewayProxyEvent,
    caller: { userId: 'waiter', groups: new Set(), requestId: 'r' },
    headers: { 'idempotency-key': key },
  });
  const timing = { leaseMs: 60_000, waitMs: 300, pollMs: 20, now: Date.now };
  /** Until the first request holds its key (the order of the two requests is the point of these tests). */
  const claimed = async (key: string) => {
    while (!(await store.get('waiter', key, Date.now()))) await new Promise((resolve) => setTimeout(resolve, 5));
  };

  it('waits for it and replays its response', async () => {
    const service = new IdempotencyService(store, { ...timing, waitMs: 10_000 });
    let finish!: () => void;
    const first = underIdempotencyKey(
      service,
      request('wait'),
      { contact_id: 'a' },
      () => new Promise((resolve) => (finish = () => resolve(created))),
    );
    await claimed('wait');
    const second = underIdempotencyKey(service, request('wait'), { contact_id: 'a' }, async () => ({
      status: 201,
      body: { id: 'a second one' },
    }));
    setTimeout(() => finish(), 100);
    expect(await first).toEqual(created);
    expect(await second).toEqual({ ...created, headers: { 'idempotent-replayed': 'true' } });
  });

  it('renews the stored response on replay when asked to (a presigned link must not be served stale)', async () => {
    const service = new IdempotencyService(store, timing);
    const operation = async () => ({ status: 201, body: { link: 'first' } });
    const refresh = async (stored: { status: number; body: unknown }) => ({ ...stored, body: { link: 'renewed' } });
    expect(await underIdempotencyKey(service, request('refresh'), { contact_id: 'a' }, operation, { refresh })).toEqual({
      status: 201,
      body: { link: 'first' },
    });
    expect((await underIdempotencyKey(service, request('refresh'), { contact_id: 'a' }, operation, { refresh })).body).toEqual({
      link: 'renewed',
    });
  });

  it('answers 409 idempotency_key_in_use when it is still running after the wait', async () => {
    const service = new IdempotencyService(store, timing);
    void underIdempotencyKey(service, request('stuck'), { contact_id: 'a' }, () => new Promise(() => {}));
    await claimed('stuck');
    const refusal = await underIdempotencyKey(service, request('stuck'), { contact_id: 'a' }, async () => created).catch(
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(KeyInUse);
    expect(toApiError(refusal)).toMatchObject({ status: 409, code: 'idempotency_key_in_use' });
  });

  it('gives a run after a failed one the same seed, so a retry after an unknown outcome finds what the first run made', async () => {
    const service = new IdempotencyService(store, timing);
    const seeds: (string | undefined)[] = [];
    const failing = async (seed: string | undefined) => {
      seeds.push(seed);
      return { status: 503, body: { error: 'the answer of the write was lost' } };
    };
    const succeeding = async (seed: string | undefined) => {
      seeds.push(seed);
      return created;
    };
    expect((await underIdempotencyKey(service, request('unknown-outcome'), { contact_id: 'a' }, failing)).status).toBe(503);
    expect(await underIdempotencyKey(service, request('unknown-outcome'), { contact_id: 'a' }, succeeding)).toEqual(created);
    expect(seeds).toHaveLength(2);
    expect(seeds[0]).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(seeds[1]).toBe(seeds[0]);
  });

  it('answers 409 idempotency_key_reused at once when the running request is a different one', async () => {
    const service = new IdempotencyService(store, { ...timing, waitMs: 60_000 });
    void underIdempotencyKey(service, request('different'), { contact_id: 'a' }, () => new Promise(() => {}));
    await claimed('different');
    const refusal = await underIdempotencyKey(service, request('different'), { contact_id: 'b' }, async () => created).catch(
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(KeyReused);
    expect(toApiError(refusal)).toMatchObject({ status: 409, code: 'idempotency_key_reused' });
  });
});
