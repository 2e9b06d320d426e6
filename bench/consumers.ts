import { randomBytes } from 'node:crypto';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { type LocalApi, startLocalApi } from '../infra/local/server.js';
import { type Composition, dynamo, largeThreads, s3Bucket } from '../shared/app.js';
import { attachmentItem } from '../shared/attachments/dynamo-store.js';
import type { AttachmentRecord } from '../shared/attachments/model.js';
import { toItem } from '../shared/conversations/item-codec.js';
import { LARGE_SIDE_KEY } from '../shared/conversations/large-threads.js';
import { newConversation } from '../shared/conversations/model.js';
import { uniquenessItem } from '../shared/conversations/uniqueness.js';
import { attachmentConversationKey, conversationKey, largeSideKey } from '../shared/dynamo/keys.js';
import { attachmentIndexes } from '../shared/dynamo/tables.js';
import { fileKey, userFilesPrefix } from '../shared/files/keys.js';
import { newId } from '../shared/ids.js';
import { PRICES } from './cost.js';
import { billedWriteUnits, callCount, emptyCapacityTally, meterCapacity } from './dynamo-capacity.js';
import { Api } from './local-api.js';
import { LOCAL_CREDENTIALS, LOCAL_ENV } from './processes.js';
import { putItems } from './seed-conversations.js';
import { sidesActiveSince } from './sharing.js';
import { round } from './stats.js';

/**
 * The stream consumers at the sizes issue 26 names, on the local server with
 * its stream pollers (which, like the event source mappings, retry a failed
 * batch from where it stopped, and never give up): an upload into a group of
 * 10,000 sides until every side shows it, and the removal of a side holding
 * 10,000 uploads until every record and file is gone. The server runs in this
 * process so that every DynamoDB call of its Composition (handlers and consumers)
 * is metered: the units DynamoDB reports (ReturnConsumedCapacity), with the
 * events table's transactional writes by AWS's rule from the items sent
 * (item-size.ts; DynamoDB Local under-reports them), as the cost table counts
 * them. The stream pollers' own reads are not counted (on AWS the mapping's,
 * free for Lambda triggers), nor the bench's seeding and polling.
 */
export interface ConsumerSettings {
  groupSides: number;
  sideUploads: number;
}

export interface Metered {
  /** DynamoDB calls by command. */
  calls: Record<string, number>;
  readUnits: number;
  writeUnits: number;
  /** Items written and read (dynamo-capacity.ts). */
  itemsWritten: number;
  itemsRead: number;
  /** At PRICES' on-demand rates. */
  dollars: number;
}

export interface GroupUploadFigure extends Metered {
  sides: number;
  /** Seeding the sides (BatchWriteItem, 25 items a call, 8 in flight). */
  seedSeconds: number;
  pollMs: number;
  /** From the upload's 201 until half of the sides, then every side, show last_active_at ≥ the upload's created_at. */
  halfSidesMs: number;
  lastSideMs: number;
  /** Sides reached at the end (must be every side but the uploader's). */
  reached: number;
}

export interface SideCleanupFigure extends Metered {
  uploads: number;
  seedSeconds: number;
  pollMs: number;
  /** From the DELETE's 200 until no record of the side is left in its index, and until none of the files is left. */
  recordsGoneMs: number;
  filesGoneMs: number;
  /** S3 calls by operation. */
  s3Calls: Record<string, number>;
}

export interface ConsumerFigures {
  group: GroupUploadFigure;
  sideCleanup: SideCleanupFigure;
}

const DEADLINE_MS = 30 * 60_000;
const GROUP_POLL_MS = 1_000;
const CLEANUP_POLL_MS = 1_000;
export async function measureConsumers(
  composition: Composition,
  backends: { DYNAMODB_ENDPOINT: string; S3_ENDPOINT: string },
  authSecret: string,
  settings: ConsumerSettings,
  step: (message: string) => void,
): Promise<ConsumerFigures> {
  const run = randomBytes(3).toString('hex');
  step(`consumers: seeding a group of ${settings.groupSides.toLocaleString('en')} sides`);
  const seeded = await seedGroup(composition, `consumers-group-${run}`, settings.groupSides);
  const server = await startLocalApi({
    port: 0,
    env: { ...LOCAL_ENV, ...backends, AUTH_SECRET: authSecret, LOCAL_STREAM_CONSUMERS: 'on' },
  });
  try {
    const meter = meterOf(server);
    const api = new Api(server.url, authSecret);
    step('consumers: the stream consumers catch up with the records of the parts before');
    await meter.settle();
    step(`consumers: one upload into the group of ${settings.groupSides.toLocaleString('en')} sides`);
    const group = await groupUpload(composition, api, meter, seeded);
    step(`consumers: ${JSON.stringify(group)}`);
    step(`consumers: seeding a side with ${settings.sideUploads.toLocaleString('en')} uploads and their files`);
    const side = await seedSide(composition, api, `consumers-side-${run}`, settings.sideUploads);
    await meter.settle();
    step(`consumers: the cleanup of that side`);
    const sideCleanup = await cleanUpSide(composition, api, meter, side);
    return { group, sideCleanup };
  } finally {
    await server.close();
  }
}

export interface SeededGroup {
  groupId: string;
  members: string[];
  sides: string[];
  seedSeconds: number;
}

/**
 * Every member's side of the group and its uniqueness record, as POST
 * /v1/conversations group_id=G writes them; `large`: as a large thread's
 * switch leaves them (each side marked, the thread record large, swept and settled).
 */
export async function seedGroup(composition: Composition, groupId: string, count: number, large = false): Promise<SeededGroup> {
  const started = performance.now();
  const members = Array.from({ length: count }, (_, index) => `${groupId}-member-${index}`);
  const sides = members.map(() => newId('conv'));
  const now = Math.floor(Date.now() / 1000);
  const items = members.flatMap((member, index) => {
    const conversation = newConversation(sides[index]!, { kind: 'group', id: groupId }, now);
    const side = toItem(member, conversation);
    return [
      large ? { ...side, [LARGE_SIDE_KEY]: largeSideKey(member) } : side,
      uniquenessItem(member, { kind: 'group', id: groupId }, conversation.id),
    ];
  });
  await putItems(composition.use(dynamo), composition.config.conversationsTable, items);
  if (large) {
    const threads = composition.use(largeThreads);
    await threads.becomeLarge(groupId, undefined, now, []);
    await threads.swept(groupId, now);
    await threads.settled(groupId);
  }
  return { groupId, members, sides, seedSeconds: round((performance.now() - started) / 1000) };
}

async function groupUpload(composition: Composition, api: Api, meter: Meter, group: SeededGroup): Promise<GroupUploadFigure> {
  const uploader = await api.user(group.members[0]!, [group.groupId]);
  const others = group.members.slice(1).map((member, index) => conversationKey(member, group.sides[index + 1]!));
  meter.reset();
  const { attachment, answeredAt } = await api.upload(uploader, group.sides[0]!);
  let halfSidesMs: number | undefined;
  let lastSideMs: number | undefined;
  let reached = 0;
  while (lastSideMs === undefined) {
    reached = await sidesActiveSince(composition, others, attachment.created_at as number);
    const elapsed = performance.now() - answeredAt;
    if (reached * 2 >= others.length) halfSidesMs ??= elapsed;
    if (reached === others.length) lastSideMs = elapsed;
    else if (elapsed > DEADLINE_MS) throw new Error(`${reached} of ${others.length} sides reached after ${DEADLINE_MS} ms`);
    else await sleep(GROUP_POLL_MS);
  }
  await meter.settle();
  return {
    sides: group.members.length,
    seedSeconds: group.seedSeconds,
    pollMs: GROUP_POLL_MS,
    halfSidesMs: round(halfSidesMs!, 0),
    lastSideMs: round(lastSideMs, 0),
    reached,
    ...meter.figures(),
  };
}

interface SeededSide {
  user: string;
  sideId: string;
  prefix: string;
  seedSeconds: number;
}

/**
 * A member alone in their group (so the fan-out has no other side to
 * write to, and what is measured is the cleanup), holding a side made by
 * POST, with `count` upload records in it written as uploads leave them, and
 * their files in S3 (a few bytes each).
 */
async function seedSide(composition: Composition, api: Api, groupId: string, count: number): Promise<SeededSide> {
  const user = await api.user(`${groupId}-owner`, [groupId]);
  const sideId = await api.side(user, { group_id: groupId });
  const started = performance.now();
  const createdAt = Math.floor(Date.now() / 1000);
  const records = Array.from({ length: count }, (_, index): AttachmentRecord => {
    const id = newId('att');
    return {
      id,
      message_id: null,
      filename: `file-${index}.txt`,
      file_type: 'text/plain',
      file_size: 5,
      created_at: createdAt,
      uploaded_by: user.id,
      placement: { conversation_id: sideId, counterpart: { kind: 'group', id: groupId } },
      file_key: fileKey(user.id, id, 'bench-seed'),
      scan_status: 'clean' as const,
    };
  });
  const bucket = composition.use(s3Bucket);
  await pool(records.length, 16, (index) => bucket.putObject(records[index]!.file_key, Buffer.from('bytes'), 'text/plain'));
  await putItems(composition.use(dynamo), composition.config.attachmentsTable, records.map(attachmentItem));
  return { user: user.id, sideId, prefix: userFilesPrefix(user.id), seedSeconds: round((performance.now() - started) / 1000) };
}

async function cleanUpSide(composition: Composition, api: Api, meter: Meter, side: SeededSide): Promise<SideCleanupFigure> {
  const owner = await api.user(side.user);
  const uploads = await recordsLeft(composition, side);
  meter.reset();
  await api.expect(200, owner, 'DELETE', `/v1/conversations/${side.sideId}`);
  const deleted = performance.now();
  let recordsGoneMs: number | undefined;
  let filesGoneMs: number | undefined;
  while (recordsGoneMs === undefined || filesGoneMs === undefined) {
    const elapsed = performance.now() - deleted;
    if (recordsGoneMs === undefined && (await recordsLeft(composition, side)) === 0) recordsGoneMs = performance.now() - deleted;
    if (filesGoneMs === undefined && (await filesLeft(composition, side.prefix)) === 0) filesGoneMs = performance.now() - deleted;
    if (recordsGoneMs !== undefined && filesGoneMs !== undefined) break;
    if (elapsed > DEADLINE_MS) throw new Error(`side not cleaned up after ${DEADLINE_MS} ms`);
    await sleep(CLEANUP_POLL_MS);
  }
  await meter.settle();
  return {
    uploads,
    seedSeconds: side.seedSeconds,
    pollMs: CLEANUP_POLL_MS,
    recordsGoneMs: round(recordsGoneMs, 0),
    filesGoneMs: round(filesGoneMs, 0),
    s3Calls: meter.s3Calls(),
    ...meter.figures(),
  };
}

/** The side's upload records its index still holds (Select COUNT, page after page). */
async function recordsLeft(composition: Composition, side: SeededSide): Promise<number> {
  const index = attachmentIndexes.conversation;
  let count = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await composition.use(dynamo).send(
      new QueryCommand({
        TableName: composition.config.attachmentsTable,
        IndexName: index.name,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': index.partitionKey },
        ExpressionAttributeValues: { ':pk': attachmentConversationKey(side.user, side.sideId) },
        Select: 'COUNT',
        ExclusiveStartKey: start,
      }),
    );
    count += page.Count ?? 0;
    start = page.LastEvaluatedKey;
  } while (start);
  return count;
}

/**
 * The objects left under the user's prefix, listed straight from the S3
 * stand-in; unknown (a listing that raced the deletions it lists can fail
 * with a 500 on s3rver) counts as some left, and is read again.
 */
async function filesLeft(composition: Composition, prefix: string): Promise<number> {
  const s3 = new S3Client({
    region: composition.config.region,
    endpoint: composition.config.s3Endpoint,
    forcePathStyle: true,
    credentials: LOCAL_CREDENTIALS,
  });
  try {
    let count = 0;
    let token: string | undefined;
    do {
      const page = await s3.send(
        new ListObjectsV2Command({ Bucket: composition.config.filesBucket, Prefix: prefix, ContinuationToken: token }),
      );
      count += page.KeyCount ?? 0;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return count;
  } catch (error) {
    if ((error as { $fault?: string }).$fault !== 'server') throw error;
    return Number.POSITIVE_INFINITY;
  } finally {
    s3.destroy();
  }
}

export interface Meter {
  reset(): void;
  figures(): Metered;
  s3Calls(): Record<string, number>;
  /** Waits until two whole seconds pass without a DynamoDB call of the server's Composition (the consumers are done). */
  settle(): Promise<void>;
}

/** Meters every DynamoDB and S3 call of the server's Composition from now on (see the module's comment). */
export function meterOf(server: LocalApi): Meter {
  const { composition } = server;
  let dynamoCalls = emptyCapacityTally();
  let s3: Record<string, number> = {};
  meterCapacity(composition, () => dynamoCalls);
  composition.use(s3Bucket).observe((operation) => {
    s3[operation] = (s3[operation] ?? 0) + 1;
  });
  return {
    reset() {
      dynamoCalls = emptyCapacityTally();
      s3 = {};
    },
    figures: () => {
      const { readUnits } = dynamoCalls;
      const writeUnits = billedWriteUnits(dynamoCalls);
      return {
        calls: { ...dynamoCalls.calls },
        readUnits: round(readUnits, 1),
        writeUnits: round(writeUnits, 1),
        itemsWritten: dynamoCalls.itemsWritten,
        itemsRead: dynamoCalls.itemsRead,
        dollars: round((readUnits * PRICES.dynamoReadUnitPerMillion + writeUnits * PRICES.dynamoWriteUnitPerMillion) / 1e6, 4),
      };
    },
    s3Calls: () => ({ ...s3 }),
    async settle() {
      let before = callCount(dynamoCalls);
      for (;;) {
        await sleep(2_000);
        const now = callCount(dynamoCalls);
        if (now === before) return;
        before = now;
      }
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function pool(count: number, concurrency: number, work: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await work(next++);
    }),
  );
}
