import autocannon from 'autocannon';
import { attachmentStore } from '../shared/app.js';
import type { Fixture } from './fixture.js';
import { median, percentile, ratio, round } from './stats.js';

/**
 * Warm latency and throughput: each endpoint driven over loopback at a fixed
 * concurrency for a fixed time, beside the rate of the backend call it makes,
 * issued the same way from this process through the same store: the rate the
 * API would reach if nothing but the backend call cost anything. (With two
 * calls per request, as POST of an existing contact makes, the SDK work of
 * this one process can be the limit instead, and the API may pass it.)
 */
export const CONCURRENCY = 16;

export interface LoadFigure {
  p50Ms: number;
  p99Ms: number;
  requestsPerSecond: number;
  /** Non-2xx answers plus connection errors and timeouts. */
  errors: number;
}

export interface WarmFigure {
  endpoint: string;
  api: LoadFigure;
  backendCall: string;
  backend: LoadFigure;
  /** API requests/s over backend calls/s. */
  ratio: number;
}

interface Endpoint {
  endpoint: string;
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  form?: Record<string, string>;
  backendCall: string;
  backend: () => Promise<unknown>;
}

export function warmEndpoints(fixture: Fixture): Endpoint[] {
  const [getId, updateId] = fixture.conversationIds as [string, string];
  const [attachmentId] = fixture.attachmentIds as [string];
  const { store, userId } = fixture;
  const attachments = fixture.composition.use(attachmentStore);
  return [
    {
      endpoint: 'GET /v1/conversations/:id',
      method: 'GET',
      path: `/v1/conversations/${getId}`,
      backendCall: 'GetItem',
      backend: () => store.get(userId, getId),
    },
    {
      endpoint: 'GET /v1/conversations',
      method: 'GET',
      path: '/v1/conversations?limit=10',
      backendCall: 'Query (limit 11)',
      backend: () => store.list(userId, {}, { limit: 10 }),
    },
    {
      endpoint: 'POST /v1/conversations (existing contact)',
      method: 'POST',
      path: '/v1/conversations',
      form: { contact_id: fixture.contactId },
      backendCall: '2 × GetItem (record, conversation)',
      backend: () => store.findOrCreate(userId, { kind: 'contact', id: fixture.contactId }, undefined, 'bench'),
    },
    {
      endpoint: 'PUT /v1/conversations/:id',
      method: 'PUT',
      path: `/v1/conversations/${updateId}`,
      form: { is_muted: 'true' },
      backendCall: 'UpdateItem',
      backend: () => store.update(userId, updateId, { mute: { kind: 'forever' } }, 'bench', new Set()),
    },
    {
      // The record is the only backend call: file_url is presigned in the function, no S3 request.
      endpoint: 'GET /v1/attachments/:id',
      method: 'GET',
      path: `/v1/attachments/${attachmentId}`,
      backendCall: 'GetItem (file_url signed locally)',
      backend: () => attachments.get(attachmentId),
    },
    {
      // Against GET /v1/conversations above: the same Query, plus ten file_url signed in the function.
      endpoint: 'GET /v1/attachments',
      method: 'GET',
      path: '/v1/attachments?limit=10',
      backendCall: 'Query (limit 11, file_url signed locally)',
      backend: () => attachments.listUploads(userId, { limit: 10 }),
    },
  ];
}

/**
 * API and backend alternate for `rounds` rounds, so that a noisy neighbour
 * slows both alike; each figure is the median over the rounds.
 */
export async function measureWarm(
  url: string,
  token: string,
  endpoints: Endpoint[],
  seconds: number,
  rounds: number,
): Promise<WarmFigure[]> {
  const figures: WarmFigure[] = [];
  for (const endpoint of endpoints) {
    const request = {
      url: `${url}${endpoint.path}`,
      method: endpoint.method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(endpoint.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(endpoint.form ? { body: new URLSearchParams(endpoint.form).toString() } : {}),
    };
    await load(request, 1); // warm-up: JIT, connections, the authorizer's cached decision
    await calls(endpoint.backend, 1);
    const api: LoadFigure[] = [];
    const backend: LoadFigure[] = [];
    for (let round = 0; round < rounds; round += 1) {
      api.push(await load(request, seconds));
      backend.push(await calls(endpoint.backend, seconds));
    }
    const apiFigure = medianFigure(api);
    const backendFigure = medianFigure(backend);
    figures.push({
      endpoint: endpoint.endpoint,
      api: apiFigure,
      backendCall: endpoint.backendCall,
      backend: backendFigure,
      ratio: ratio(apiFigure.requestsPerSecond, backendFigure.requestsPerSecond),
    });
  }
  return figures;
}

function medianFigure(rounds: LoadFigure[]): LoadFigure {
  const of = (pick: (figure: LoadFigure) => number) => median(rounds.map(pick));
  return {
    p50Ms: of((figure) => figure.p50Ms),
    p99Ms: of((figure) => figure.p99Ms),
    requestsPerSecond: of((figure) => figure.requestsPerSecond),
    errors: rounds.reduce((sum, figure) => sum + figure.errors, 0),
  };
}

async function load(request: autocannon.Options, seconds: number): Promise<LoadFigure> {
  const result = await autocannon({ ...request, connections: CONCURRENCY, duration: seconds });
  return {
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requestsPerSecond: round(result.requests.total / (result.duration || seconds), 0),
    errors: result.non2xx + result.errors + result.timeouts,
  };
}

/** The backend call at the same concurrency for the same time, timed per call like autocannon does. */
async function calls(call: () => Promise<unknown>, seconds: number): Promise<LoadFigure> {
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const worker = async () => {
    while (performance.now() < deadline) {
      const before = performance.now();
      try {
        await call();
        latencies.push(performance.now() - before);
      } catch {
        errors += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const elapsed = (performance.now() - started) / 1000;
  return {
    p50Ms: round(percentile(latencies, 50), 2),
    p99Ms: round(percentile(latencies, 99), 2),
    requestsPerSecond: round(latencies.length / elapsed, 0),
    errors,
  };
}
