import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { FAN_OUT_FUNCTION } from '../infra/local/iam.js';
import { RealtimeClient } from '../infra/local/realtime-client.js';
import { type LocalApi, startLocalApi } from '../infra/local/server.js';
import type { Composition } from '../shared/app.js';
import { conversationKey } from '../shared/dynamo/keys.js';
import { type Meter, type Metered, meterOf, type SeededGroup, seedGroup } from './consumers.js';
import { groupPushDollars, meetsGoal, type UploadDollars, uploadDollars } from './group-cost.js';
import { Api, type Json, type User } from './local-api.js';
import { LOCAL_ENV } from './processes.js';
import { sidesActiveSince } from './sharing.js';
import { round, type Spread, spread } from './stats.js';

/**
 * Large groups (issue 34; docs/decisions.md, "Large groups"), on the local
 * server with its stream consumers, every DynamoDB call of its Composition
 * metered as consumers.ts meters it, and each fan-out invocation timed:
 * - one upload into groups of each size, large mode (the thread seeded as
 *   its switch leaves it) and small mode (LARGE_GROUP_SIDES above the size)
 *   up to `smallUpTo` sides, beside a direct upload (to a contact, with its
 *   fan-out to the contact's side): items written and read, $ per upload
 *   (DynamoDB and Lambda: the upload's answer time as the client saw it,
 *   which bounds its handler's, and each fan-out invocation), and the time
 *   until the last member's list shows it. Large: a member's
 *   GET /v1/conversations?order=activity through a second server without
 *   consumers (so the polls are not metered), then a sample of members
 *   checked the same way; small: every side read straight from DynamoDB;
 * - the push to `pushMembers` connected members of one large group: from
 *   each upload's answer to its hint on every member's group channel.
 */
export interface LargeGroupSettings {
  sizes: number[];
  /** Small mode runs at the sizes up to this one (a small upload into 10,000 sides takes minutes: docs/performance.md). */
  smallUpTo: number;
  pushMembers: number;
  pushUploads: number;
}

export interface UploadFigure extends Metered {
  /** Fan-out invocations and their billed ms (each rounded up), and the upload's answer time. */
  fanOutInvocations: number;
  fanOutBilledMs: number;
  uploadAnswerMs: number;
  cost: UploadDollars;
}

export interface GroupUploadRow extends UploadFigure {
  sides: number;
  mode: 'large' | 'small';
  seedSeconds: number;
  pollMs: number;
  /** From the upload's 201 until the last member's list shows it (large: any member's, then a sample checked). */
  lastMemberMs: number;
  /** Of a direct upload's DynamoDB and Lambda $. */
  costRatio: number;
}

export interface GroupPushFigure extends Spread {
  members: number;
  uploads: number;
  /** Hints heard, of members × uploads. */
  heard: number;
  /** AppSync Events per upload: one publish and a delivery per connected member. */
  appsyncOperations: number;
  appsyncDollars: number;
}

export interface LargeGroupFigures {
  direct: UploadFigure & { lastMemberMs: number };
  uploads: GroupUploadRow[];
  push: GroupPushFigure;
  /** At the largest size, large mode, against the goal. */
  goal: { sides: number; costRatio: number; lastMemberMs: number; met: boolean };
}

const DEADLINE_MS = 30 * 60_000;
const PUSH_DEADLINE_MS = 60_000;
const LIST_POLL_MS = 25;
const SMALL_POLL_MS = 250;
const SAMPLED_MEMBERS = 20;
const CONNECT_BATCH = 50;

export async function measureLargeGroups(
  composition: Composition,
  backends: { DYNAMODB_ENDPOINT: string; S3_ENDPOINT: string },
  authSecret: string,
  settings: LargeGroupSettings,
  step: (message: string) => void,
): Promise<LargeGroupFigures> {
  const run = randomBytes(3).toString('hex');
  const env = { ...LOCAL_ENV, ...backends, AUTH_SECRET: authSecret };
  const reader = await startLocalApi({ port: 0, env: { ...env, LOCAL_STREAM_CONSUMERS: 'off' } });
  try {
    const readerApi = new Api(reader.url, authSecret);
    const bench: Bench = { composition, readerApi, step, run };
    const large = await timedServer({ ...env, LARGE_GROUP_SIDES: String(Math.min(...settings.sizes)) });
    let direct: LargeGroupFigures['direct'];
    const uploads: GroupUploadRow[] = [];
    let push: GroupPushFigure;
    try {
      step('groups: the stream consumers catch up with the records of the parts before');
      await large.meter.settle();
      direct = await directUpload(bench, large);
      step(`groups: direct upload ${JSON.stringify(direct)}`);
      for (const sides of settings.sizes) uploads.push(await groupUpload(bench, large, sides, 'large', direct.cost));
      push = await groupPush(bench, large, settings.pushMembers, settings.pushUploads);
      step(`groups: push ${JSON.stringify(push)}`);
    } finally {
      await large.server.close();
    }
    const smallSizes = settings.sizes.filter((sides) => sides <= settings.smallUpTo);
    if (smallSizes.length > 0) {
      const small = await timedServer({ ...env, LARGE_GROUP_SIDES: String(Math.max(...smallSizes) + 1) });
      try {
        await small.meter.settle();
        for (const sides of smallSizes) uploads.push(await groupUpload(bench, small, sides, 'small', direct.cost));
      } finally {
        await small.server.close();
      }
    }
    const largest = uploads.filter((row) => row.mode === 'large').at(-1)!;
    return {
      direct,
      uploads,
      push,
      goal: { sides: largest.sides, lastMemberMs: largest.lastMemberMs, ...meetsGoal(direct.cost, largest) },
    };
  } finally {
    await reader.close();
  }
}

interface Bench {
  composition: Composition;
  readerApi: Api;
  step: (message: string) => void;
  run: string;
}

interface TimedServer {
  server: LocalApi;
  api: Api;
  meter: Meter;
  /** Starts counting afresh: DynamoDB calls and fan-out invocations. */
  reset(): void;
  /** The fan-out's invocations (ms) since the last reset. */
  fanOuts(): number[];
}

async function timedServer(env: Record<string, string>): Promise<TimedServer> {
  let fanOuts: number[] = [];
  const server = await startLocalApi({
    port: 0,
    env: { ...env, LOCAL_STREAM_CONSUMERS: 'on' },
    consumerInvoked: (name, ms) => {
      if (name === FAN_OUT_FUNCTION) fanOuts.push(ms);
    },
  });
  const meter = meterOf(server);
  const reset = () => {
    meter.reset();
    fanOuts = [];
  };
  return { server, api: new Api(server.url, server.authSecret), meter, reset, fanOuts: () => fanOuts };
}

/** One upload to a contact whose side exists, until the contact's list shows it. */
async function directUpload(bench: Bench, timed: TimedServer): Promise<LargeGroupFigures['direct']> {
  const { api } = timed;
  const sender = await api.user(`groups-direct-${bench.run}`);
  const contact = await api.user(`groups-direct-contact-${bench.run}`);
  const sideId = await api.side(sender, { contact_id: contact.id });
  await api.side(contact, { contact_id: sender.id });
  await timed.meter.settle();
  timed.reset();
  const { attachment, answeredAt, answerMs } = await timedUpload(api, sender, sideId);
  const lastMemberMs = await listShows(bench.readerApi, contact, attachment.created_at, answeredAt);
  await timed.meter.settle();
  return { ...uploadFigure(timed, answerMs), lastMemberMs: round(lastMemberMs, 0) };
}

async function groupUpload(
  bench: Bench,
  timed: TimedServer,
  sides: number,
  mode: 'large' | 'small',
  direct: UploadDollars,
): Promise<GroupUploadRow> {
  const label = `${sides.toLocaleString('en')} sides, ${mode}`;
  bench.step(`groups: seeding a group of ${label}`);
  const group = await seedGroup(bench.composition, `groups-${mode}-${sides}-${bench.run}`, sides, mode === 'large');
  await timed.meter.settle();
  bench.step(`groups: one upload into the group of ${label}`);
  const uploader = await timed.api.user(group.members[0]!, [group.groupId]);
  timed.reset();
  const { attachment, answeredAt, answerMs } = await timedUpload(timed.api, uploader, group.sides[0]!);
  const since = attachment.created_at as number;
  const lastMemberMs =
    mode === 'large' ? await largeListsShow(bench, group, since, answeredAt) : await everySideShows(bench, group, since, answeredAt);
  await timed.meter.settle();
  const figure = uploadFigure(timed, answerMs);
  const row: GroupUploadRow = {
    sides,
    mode,
    seedSeconds: group.seedSeconds,
    pollMs: mode === 'large' ? LIST_POLL_MS : SMALL_POLL_MS,
    lastMemberMs: round(lastMemberMs, 0),
    costRatio: round(figure.cost.total / direct.total, 2),
    ...figure,
  };
  bench.step(`groups: ${JSON.stringify(row)}`);
  return row;
}

function uploadFigure(timed: TimedServer, uploadAnswerMs: number): UploadFigure {
  const metered = timed.meter.figures();
  const fanOuts = timed.fanOuts();
  return {
    ...metered,
    fanOutInvocations: fanOuts.length,
    fanOutBilledMs: fanOuts.reduce((sum, ms) => sum + Math.ceil(ms), 0),
    uploadAnswerMs: round(uploadAnswerMs, 0),
    cost: uploadDollars(metered, [uploadAnswerMs, ...fanOuts]),
  };
}

async function timedUpload(api: Api, user: User, sideId: string): Promise<{ attachment: Json; answeredAt: number; answerMs: number }> {
  const started = performance.now();
  const { attachment, answeredAt } = await api.upload(user, sideId);
  return { attachment, answeredAt, answerMs: answeredAt - started };
}

/** Large: a member's list shows it once the thread's activity moved; then a sample of members' lists must too. */
async function largeListsShow(bench: Bench, group: SeededGroup, since: number, answeredAt: number): Promise<number> {
  const member = (index: number) => bench.readerApi.user(group.members[index]!, [group.groupId]);
  const elapsed = await listShows(bench.readerApi, await member(1), since, answeredAt);
  const count = Math.min(SAMPLED_MEMBERS, group.members.length - 1);
  for (let k = 1; k <= count; k += 1) {
    const index = Math.floor((k * (group.members.length - 1)) / count);
    const listed = await firstListed(bench.readerApi, await member(index));
    if (!(listed >= since)) throw new Error(`member ${index} of ${group.groupId} lists last_active_at ${listed}, not ≥ ${since}`);
  }
  return elapsed;
}

/** Until the user's most recently active conversation (they hold one) shows activity at `since` or later. */
async function listShows(api: Api, user: User, since: number, answeredAt: number): Promise<number> {
  for (;;) {
    const elapsed = performance.now() - answeredAt;
    if ((await firstListed(api, user)) >= since) return elapsed;
    if (elapsed > DEADLINE_MS) throw new Error(`${user.id}'s list does not show the upload after ${DEADLINE_MS} ms`);
    await sleep(LIST_POLL_MS);
  }
}

async function firstListed(api: Api, user: User): Promise<number> {
  const page = await api.expect(200, user, 'GET', '/v1/conversations?order=activity&limit=1');
  return (page.data[0]?.last_active_at as number | null | undefined) ?? Number.NEGATIVE_INFINITY;
}

/** Small: every other side written (read straight from DynamoDB, as consumers.ts does). */
async function everySideShows(bench: Bench, group: SeededGroup, since: number, answeredAt: number): Promise<number> {
  const others = group.members.slice(1).map((member, index) => conversationKey(member, group.sides[index + 1]!));
  for (;;) {
    const reached = await sidesActiveSince(bench.composition, others, since);
    const elapsed = performance.now() - answeredAt;
    if (reached === others.length) return elapsed;
    if (elapsed > DEADLINE_MS) throw new Error(`${reached} of ${others.length} sides reached after ${DEADLINE_MS} ms`);
    await sleep(SMALL_POLL_MS);
  }
}

/** Every member of a large group connected to its group channel; uploads one at a time, each until every member heard it. */
async function groupPush(bench: Bench, timed: TimedServer, members: number, uploads: number): Promise<GroupPushFigure> {
  bench.step(`groups: ${members} members of a large group connected to its channel, ${uploads} uploads pushed`);
  const group = await seedGroup(bench.composition, `groups-push-${bench.run}`, members, true);
  const users = await Promise.all(group.members.map((member) => timed.api.user(member, [group.groupId])));
  let heardAt: (number | undefined)[] = [];
  const clients: RealtimeClient[] = [];
  try {
    for (let first = 0; first < members; first += CONNECT_BATCH) {
      const batch = users.slice(first, first + CONNECT_BATCH);
      clients.push(...(await Promise.all(batch.map((user, offset) => listening(timed.api, user, group.groupId, first + offset)))));
    }
    const sample: number[] = [];
    for (let upload = 0; upload < uploads; upload += 1) {
      heardAt = new Array(members).fill(undefined);
      const { answeredAt } = await timed.api.upload(users[0]!, group.sides[0]!);
      const deadline = performance.now() + PUSH_DEADLINE_MS;
      while (heardAt.some((at) => at === undefined)) {
        if (performance.now() > deadline)
          throw new Error(
            `upload ${upload}: ${heardAt.filter((at) => at !== undefined).length} of ${members} hints in ${PUSH_DEADLINE_MS} ms`,
          );
        await sleep(5);
      }
      // A hint can beat the answer home: the commit was before both.
      sample.push(...heardAt.map((at) => Math.max(0, at! - answeredAt)));
    }
    const price = groupPushDollars(members);
    return {
      members,
      uploads,
      heard: sample.length,
      ...spread(sample),
      appsyncOperations: price.operations,
      appsyncDollars: price.dollars,
    };
  } finally {
    await Promise.all(clients.map((client) => client.close()));
  }

  async function listening(api: Api, user: User, groupId: string, index: number): Promise<RealtimeClient> {
    const endpoint = await api.expect(200, user, 'GET', '/v1/realtime');
    const channel = (endpoint.group_channels as { group_id: string; channel: string }[]).find((entry) => entry.group_id === groupId);
    if (!channel) throw new Error(`GET /v1/realtime lists no channel of ${groupId} for ${user.id}`);
    const client = await RealtimeClient.connect({ url: endpoint.url, host: endpoint.host, token: user.token, timeoutMs: PUSH_DEADLINE_MS });
    await client.subscribe(channel.channel, () => {
      heardAt[index] ??= performance.now();
    });
    return client;
  }
}
