import { randomBytes } from 'node:crypto';
import { Api, localServer, type User } from './local-api.js';
import { fileOf, multipartBody } from './multipart.js';
import { pool, settle } from './sharing.js';
import { round, spread } from './stats.js';

/**
 * Contention is not an outage (docs/api.md, "Errors"): one user writes
 * steadily (uploads into their side of a group's thread, renames of their
 * upload, pins of that side), several requests in flight, while other members
 * of the group, 1,000 sides in all, upload into the thread, so that the
 * fan-out keeps writing every member's feed and side, the user's among them.
 * Every write of the user moves their feed's head: their own requests meet
 * each other and the fan-out there. The server runs with its stream
 * consumers; its request lines (shared/observability.ts) say which requests
 * the one retry policy (shared/dynamo/busy-retry.ts) retried and how often.
 */
export interface ContentionSettings {
  /** Members of the group, each holding a side; the writer is one of them. */
  groupSides: number;
  /** The writer's requests. */
  writes: number;
}

export interface WriterFigure {
  requests: number;
  byKind: Record<string, number>;
  statuses: Record<string, number>;
  /** Requests retried at least once because another writer came first (their feed's head, their side). */
  metContention: number;
  /** Retries for contention over all requests, and the most of one request. */
  contentionRetries: number;
  maxRetriesOfOne: number;
  throttlingRetries: number;
  /** Answers 500 or above: wanted 0. */
  serverErrors: number;
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
}

export interface ContentionFigures {
  groupSides: number;
  seedSeconds: number;
  writesInFlight: number;
  uploaders: number;
  /** From the writer's first request to their last answer. */
  windowSeconds: number;
  writer: WriterFigure;
  /** The other members' uploads meanwhile, each fanned out to every side. */
  groupUploads: { requests: number; statuses: Record<string, number>; metContention: number; serverErrors: number };
  /** How long after the last answer the fan-out had nothing more to write (no DynamoDB call but the poller's for 1 s). */
  fanOutSettledSeconds: number;
  /** The group's uploads (201) whose attachment.created is in the writer's feed once it settled (a batch delivers each uploader's latest). */
  inWritersFeed: { uploads: number; found: number };
}

const WRITES_IN_FLIGHT = 4;
const UPLOADERS = 8;

const tally = (values: string[]) => {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
};

export async function measureContention(
  backends: { DYNAMODB_ENDPOINT: string; S3_ENDPOINT: string },
  authSecret: string,
  settings: ContentionSettings,
  step: (message: string) => void,
): Promise<ContentionFigures> {
  const run = randomBytes(3).toString('hex');
  const retriesOf = new Map<string, { contention: number; throttling: number }>();
  const server = await localServer(backends, authSecret, {
    consumers: true,
    onRequestLine: (line) => line.retries && retriesOf.set(line.request_id, line.retries),
  });
  try {
    const api = new Api(server.url, authSecret);
    const groupId = `bench-busy-${run}`;
    const members = await Promise.all(
      Array.from({ length: settings.groupSides }, (_, index) => api.user(`busy-${run}-${index}`, [groupId])),
    );
    step(`contention: ${settings.groupSides} members open their sides of one group`);
    const seedStarted = performance.now();
    const sides = new Array<string>(settings.groupSides);
    await pool(settings.groupSides, 8, async (index) => {
      sides[index] = await api.side(members[index]!, { group_id: groupId });
    });
    const seedSeconds = round((performance.now() - seedStarted) / 1000);
    await settle(server.counter);

    const writer = members[0]!;
    const { attachment: renamed } = await api.upload(writer, sides[0]!);
    step(
      `contention: the writer's ${settings.writes} requests, ${WRITES_IN_FLIGHT} in flight, while ${UPLOADERS} members upload into the group`,
    );
    const own: { kind: string; status: number; ms: number; requestId: string | null }[] = [];
    const others: { status: number; requestId: string | null; id?: string }[] = [];
    let writing = true;
    const started = performance.now();
    const uploads = Promise.all(
      Array.from({ length: UPLOADERS }, async (_, uploader) => {
        const member = members[1 + uploader]!;
        while (writing) {
          const answer = await api.call(
            member,
            'POST',
            '/v1/attachments',
            multipartBody(fileOf(1024), { conversation_id: sides[1 + uploader]! }),
          );
          others.push({ status: answer.status, requestId: answer.requestId, id: answer.json?.id });
        }
      }),
    );
    await pool(settings.writes, WRITES_IN_FLIGHT, async (index) => {
      const kind = ['upload', 'rename', 'pin'][index % 3]!;
      const sent = performance.now();
      const answer =
        kind === 'upload'
          ? await api.call(writer, 'POST', '/v1/attachments', multipartBody(fileOf(1024), { conversation_id: sides[0]! }))
          : kind === 'rename'
            ? await api.call(writer, 'PUT', `/v1/attachments/${renamed.id}`, new URLSearchParams({ filename: `renamed-${index}.txt` }))
            : await api.call(
                writer,
                'PUT',
                `/v1/conversations/${sides[0]!}`,
                new URLSearchParams({ is_pinned: String(index % 2 === 0), pinned_message_id: `m-${index}` }),
              );
      own.push({ kind, status: answer.status, ms: performance.now() - sent, requestId: answer.requestId });
    });
    const windowSeconds = round((performance.now() - started) / 1000);
    writing = false;
    await uploads;
    const ended = performance.now();

    step('contention: the fan-out of the group uploads settles');
    await settle(server.counter);
    const fanOutSettledSeconds = round((performance.now() - ended) / 1000);
    const created = new Set(others.flatMap((upload) => (upload.status === 201 && upload.id ? [upload.id] : [])));
    const found = await createdInFeed(api, writer, created);

    const retries = own.map((request) => retriesOf.get(request.requestId ?? '') ?? { contention: 0, throttling: 0 });
    return {
      groupSides: settings.groupSides,
      seedSeconds,
      writesInFlight: WRITES_IN_FLIGHT,
      uploaders: UPLOADERS,
      windowSeconds,
      writer: {
        requests: own.length,
        byKind: tally(own.map((request) => request.kind)),
        statuses: tally(own.map((request) => String(request.status))),
        metContention: retries.filter((count) => count.contention > 0).length,
        contentionRetries: retries.reduce((sum, count) => sum + count.contention, 0),
        maxRetriesOfOne: Math.max(0, ...retries.map((count) => count.contention)),
        throttlingRetries: retries.reduce((sum, count) => sum + count.throttling, 0),
        serverErrors: own.filter((request) => request.status >= 500).length,
        ...spread(own.map((request) => request.ms)),
      },
      groupUploads: {
        requests: others.length,
        statuses: tally(others.map((upload) => String(upload.status))),
        metContention: others.filter((upload) => (retriesOf.get(upload.requestId ?? '')?.contention ?? 0) > 0).length,
        serverErrors: others.filter((upload) => upload.status >= 500).length,
      },
      fanOutSettledSeconds,
      inWritersFeed: { uploads: created.size, found },
    };
  } finally {
    await server.stop();
  }
}

/** How many of `ids` the user's feed holds as attachment.created, read page after page. */
async function createdInFeed(api: Api, user: User, ids: Set<string>): Promise<number> {
  let found = 0;
  let cursor: string | undefined;
  for (;;) {
    const page = await api.expect(
      200,
      user,
      'GET',
      `/v1/events?type=attachment.created&limit=100${cursor ? `&starting_after=${cursor}` : ''}`,
    );
    for (const event of page.data) if (ids.has(event.data.object.id)) found += 1;
    if (!page.has_more) return found;
    cursor = page.data.at(-1).id;
  }
}
