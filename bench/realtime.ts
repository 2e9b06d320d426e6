import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { RealtimeClient } from '../infra/local/realtime-client.js';
import { Api, localServer, type User } from './local-api.js';
import { round, type Spread, spread } from './stats.js';

/**
 * The live inbox on the local server (a server process with its stream
 * consumers, the publisher among them, and the real-time endpoint):
 * - commit to hint: from a write's 2xx (its transaction, event included, has
 *   committed) to its hint arriving on a subscribed WebSocket client; one
 *   write at a time, each a pin toggle (one conversation.updated), the next
 *   after the hint of the one before and a random pause, so each figure is
 *   one event's way alone and writes land anywhere in the stream poller's
 *   cycle;
 * - connections held: N clients (each its own user and token) connected and
 *   subscribed at once, the server process's resident memory before and
 *   with them, and every one still hearing its own hint after the hold;
 * - the price of pushes on AppSync Events beside API Gateway WebSockets, from
 *   AWS's price lists (REALTIME_PRICES).
 */
export interface RealtimeSettings {
  changes: number;
  connections: number;
  holdSeconds: number;
}

export interface RealtimeFigures {
  commitToHint: Spread & { changes: number };
  connections: {
    held: number;
    connectSeconds: number;
    holdSeconds: number;
    /** The server's resident memory before the first connection, and the most it held while they were open (sampled each second). */
    serverRssBeforeMiB: number;
    serverRssWithMiB: number;
    serverKiBPerConnection: number;
    /** Connections that heard their own hint after the hold (a sample of them). */
    heardAfterHold: { sampled: number; heard: number };
  };
  cost: RealtimeCost;
}

/** The wanted p95 of commit to hint. */
export const REALTIME_TARGETS = { commitToHintP95Ms: 500 };

/**
 * us-east-1 list prices (USD). AppSync Events (AWS price list, product family
 * RealTime, "$1 per million Event API operations"; connection minutes
 * $0.08 per million): each publish, each delivery to a subscriber, each
 * connect and each subscribe is an operation (5 KB increments; a hint is
 * under 200 bytes). API Gateway WebSockets: $1.00 per million messages
 * (first billion, 32 KB increments), $0.25 per million connection minutes;
 * pushing there is a PostToConnection per connection, which is the message.
 * Lambda: $0.20 per million requests (the authorizer runs on each connect
 * and subscribe; the publisher's invocations carry batches and are left out).
 */
export const REALTIME_PRICES = {
  appsyncOperationPerMillion: 1.0,
  appsyncConnectionMinutePerMillion: 0.08,
  apiGatewayMessagePerMillion: 1.0,
  apiGatewayConnectionMinutePerMillion: 0.25,
  lambdaRequestPerMillion: 0.2,
};

export interface RealtimeCost {
  /** A push reaching one connected client: AppSync counts the publish and the delivery. */
  appsyncPerMillionPushes: number;
  apiGatewayPerMillionPushes: number;
  /** A user connected all month (30 days) with one client, reconnecting once a day (connect + subscribe, two authorizer runs). */
  appsyncPerConnectedUserMonth: number;
  apiGatewayPerConnectedUserMonth: number;
}

const MINUTES_PER_MONTH = 30 * 24 * 60;

export function realtimeCost(prices = REALTIME_PRICES): RealtimeCost {
  const perOperation = prices.appsyncOperationPerMillion / 1e6;
  const reconnects = 30;
  return {
    appsyncPerMillionPushes: round(2 * prices.appsyncOperationPerMillion, 2),
    apiGatewayPerMillionPushes: round(prices.apiGatewayMessagePerMillion, 2),
    appsyncPerConnectedUserMonth: round(
      MINUTES_PER_MONTH * (prices.appsyncConnectionMinutePerMillion / 1e6) +
        reconnects * (2 * perOperation + (2 * prices.lambdaRequestPerMillion) / 1e6),
      6,
    ),
    // $connect is a message; its authorizer runs once per connection.
    apiGatewayPerConnectedUserMonth: round(
      MINUTES_PER_MONTH * (prices.apiGatewayConnectionMinutePerMillion / 1e6) +
        reconnects * (prices.apiGatewayMessagePerMillion / 1e6 + prices.lambdaRequestPerMillion / 1e6),
      6,
    ),
  };
}

const DEADLINE_MS = 30_000;
const MAX_PAUSE_MS = 250;
const CONNECT_BATCH = 50;
const HEARD_SAMPLE = 50;

export async function measureRealtime(
  backends: { DYNAMODB_ENDPOINT: string; S3_ENDPOINT: string },
  authSecret: string,
  run: string,
  settings: RealtimeSettings,
  step: (message: string) => void,
): Promise<RealtimeFigures> {
  const server = await localServer(backends, authSecret, { consumers: true });
  try {
    const api = new Api(server.url, authSecret);
    // Connections first, on a fresh server: its memory then grows by what they hold, not by garbage of earlier work.
    step(`realtime: ${settings.connections} connections held ${settings.holdSeconds} s`);
    const connections = await measureConnections(api, server.pid, run, settings);
    step(`realtime: commit to hint over ${settings.changes} changes`);
    const commitToHint = await measureCommitToHint(api, run, settings.changes);
    return { commitToHint, connections, cost: realtimeCost() };
  } finally {
    await server.stop();
  }
}

async function listening(api: Api, user: User, onHint: (hint: { event_id: string }) => void): Promise<RealtimeClient> {
  const endpoint = await api.expect(200, user, 'GET', '/v1/realtime');
  const client = await RealtimeClient.connect({ url: endpoint.url, host: endpoint.host, token: user.token, timeoutMs: DEADLINE_MS });
  await client.subscribe(endpoint.channel, (event) => onHint(event as { event_id: string }));
  return client;
}

async function measureCommitToHint(api: Api, run: string, changes: number): Promise<RealtimeFigures['commitToHint']> {
  const user = await api.user(`realtime-${run}`);
  let arrivals: { at: number; id: string }[] = [];
  const client = await listening(api, user, (hint) => arrivals.push({ at: performance.now(), id: hint.event_id }));
  try {
    const conversationId = await api.side(user, { contact_id: `realtime-contact-${run}` });
    await waitFor(() => arrivals.length >= 1, 'the first hint');
    const sample: number[] = [];
    for (let index = 0; index < changes; index += 1) {
      await sleep(Math.random() * MAX_PAUSE_MS);
      arrivals = [];
      await api.expect(
        200,
        user,
        'PUT',
        `/v1/conversations/${conversationId}`,
        new URLSearchParams({ is_pinned: String(index % 2 === 0) }),
      );
      const committedAt = performance.now();
      await waitFor(() => arrivals.length >= 1, `the hint of change ${index}`);
      // A hint can beat the answer home: the commit was before both.
      sample.push(Math.max(0, arrivals[0]!.at - committedAt));
    }
    return { changes, ...spread(sample) };
  } finally {
    await client.close();
  }
}

async function measureConnections(
  api: Api,
  serverPid: number,
  run: string,
  settings: RealtimeSettings,
): Promise<RealtimeFigures['connections']> {
  // One request first, so that the handlers' modules and clients are loaded before the baseline.
  await api.expect(200, await api.user(`realtime-warm-${run}`), 'GET', '/v1/realtime');
  const before = rssMiB(serverPid);
  const heard = new Map<number, number>();
  const clients: RealtimeClient[] = [];
  const users: User[] = [];
  const started = performance.now();
  try {
    for (let first = 0; first < settings.connections; first += CONNECT_BATCH) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(CONNECT_BATCH, settings.connections - first) }, async (_, offset) => {
          const index = first + offset;
          const user = await api.user(`realtime-held-${run}-${index}`);
          users[index] = user;
          return listening(api, user, () => heard.set(index, (heard.get(index) ?? 0) + 1));
        }),
      );
      clients.push(...batch);
    }
    const connectSeconds = round((performance.now() - started) / 1000);
    let withConnections = rssMiB(serverPid);
    for (let second = 0; second < settings.holdSeconds; second += 1) {
      await sleep(1000);
      withConnections = Math.max(withConnections, rssMiB(serverPid));
    }
    const open = clients.filter((client) => client.closed === undefined).length;
    // Every connection still works after the hold: a sample of users each makes a change and hears it.
    const sample = Array.from({ length: Math.min(HEARD_SAMPLE, settings.connections) }, (_, k) =>
      Math.floor((k * settings.connections) / Math.min(HEARD_SAMPLE, settings.connections)),
    );
    await Promise.all(sample.map((index) => api.side(users[index]!, { contact_id: `realtime-held-contact-${run}` })));
    await waitFor(() => sample.every((index) => heard.has(index)), "the sample's hints").catch(() => undefined);
    return {
      held: open,
      connectSeconds,
      holdSeconds: settings.holdSeconds,
      serverRssBeforeMiB: round(before),
      serverRssWithMiB: round(withConnections),
      serverKiBPerConnection: round(((withConnections - before) * 1024) / Math.max(1, open)),
      heardAfterHold: { sampled: sample.length, heard: sample.filter((index) => heard.has(index)).length },
    };
  } finally {
    await Promise.all(clients.map((client) => client.close()));
  }
}

async function waitFor(done: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + DEADLINE_MS;
  while (!done()) {
    if (performance.now() > deadline) throw new Error(`realtime bench: no ${what} within ${DEADLINE_MS} ms`);
    await sleep(2);
  }
}

/** A process's resident set, MiB, from /proc (Linux, where the bench runs). */
function rssMiB(pid: number): number {
  const kib = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (!kib) throw new Error(`no VmRSS for process ${pid}`);
  return Number(kib) / 1024;
}
