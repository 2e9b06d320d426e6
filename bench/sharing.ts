import { randomBytes } from 'node:crypto';
import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import { type Composition, dynamo } from '../shared/app.js';
import { attachmentItem } from '../shared/attachments/dynamo-store.js';
import type { AttachmentRecord } from '../shared/attachments/model.js';
import { conversationKey } from '../shared/dynamo/keys.js';
import { conversationIndexes, conversationsTable } from '../shared/dynamo/tables.js';
import { fileKey } from '../shared/files/keys.js';
import { newId } from '../shared/ids.js';
import type { DynamoCounter } from './dynamodb-counter.js';
import { type PlainItem, updateWriteUnits } from './item-size.js';
import { Api, localServer, type User } from './local-api.js';
import { putItems } from './seed-conversations.js';
import { round, spread } from './stats.js';

/**
 * Sharing on the local server: how soon an upload reaches the other sides of
 * its thread (the fan-out runs from the attachments table's stream, so this
 * server runs the stream consumers), what a group of many sides costs per
 * upload, and the two read bounds of the contract: a thread list reads
 * limit + 1 items whatever the thread holds, a member's GET by id at most 2.
 * Every DynamoDB call of the server (handlers and consumers) passes a counting
 * proxy (dynamodb-counter.ts); the bench's own seeding and polling go
 * straight to DynamoDB and are not counted.
 */
export interface SharingSettings {
  /** Uploads whose fan-out to the contact's side is timed. */
  uploads: number;
  /** Members of the group, each holding a side. */
  groupSides: number;
  /** Attachments in the thread whose list is read. */
  threadAttachments: number;
}

export interface LatencyFigure {
  uploads: number;
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
}

export interface FanOutLatency extends LatencyFigure {
  /** How often the contact's client asks (GET /v1/conversations?contact_id=…&unread=true); each ask is one request more. */
  pollMs: number;
  /** Half the uploads go to a contact who holds no side (the fan-out creates it), half to one whose side exists. */
  byCase: ({ case: string } & LatencyFigure)[];
}

export interface GroupFanOut {
  sides: number;
  /** The members' POST /v1/conversations group_id=G, 8 in flight. */
  seedSeconds: number;
  pollMs: number;
  /** From the upload's 201 until half of the sides, then every side, show last_active_at ≥ the upload's created_at. */
  halfSidesMs: number;
  lastSideMs: number;
  /** DynamoDB calls of the upload request and its fan-out, by operation (and items, reads, refusals: dynamodb-counter.ts). */
  operations: Record<string, number>;
  /** Of those, what the upload request had made when its 201 came. */
  requestOperations: Record<string, number>;
  /** The local stream poller's own calls meanwhile (on AWS the event source mapping's, free for Lambda triggers). */
  pollerCalls: Record<string, number>;
  /** Items written per upload: single-item writes plus the items of transactions and batches. */
  itemsWritten: number;
  /**
   * Write units of the sides' updates (each side as read before the upload
   * and after its fan-out, bench/item-size.ts's updateWriteUnits): with every
   * index of the conversations table, and as they were before the activity
   * order's indexes (without by_activity, by_archived_activity and the
   * activity_sort they are keyed by).
   */
  sideWriteUnits: {
    withActivityIndexes: number;
    withoutActivityIndexes: number;
    perSide: { withActivityIndexes: number; withoutActivityIndexes: number };
  };
}

export interface ListReadFigure {
  list: string;
  limit: number;
  /** Attachments in the thread when it was read. */
  threadSize: number;
  returned: number;
  /** Items the page's queries read (ScannedCount), and how many queries. */
  itemsRead: number;
  queries: number;
  /** Other reads of the request (GetItem of the reader's side). */
  otherReads: number;
}

export interface MemberReadFigure {
  reader: string;
  status: number;
  /** GetItem, Query, BatchGetItem, TransactGetItems and Scan calls of the request. */
  reads: number;
  operations: Record<string, number>;
}

export interface SharingFigures {
  fanOut: FanOutLatency;
  group: GroupFanOut;
  threadList: ListReadFigure[];
  memberReads: MemberReadFigure[];
}

/** The contract's bounds these figures are read against. */
export const SHARING_TARGETS = { fanOutP95Ms: 2_000, memberGetReads: 2 };

const FAN_OUT_POLL_MS = 20;
const GROUP_POLL_MS = 200;
const DEADLINE_MS = 120_000;
/** Calls the stream poller makes to read the streams, even when nothing happens (not the consumers' reads and writes). */
const POLLER_OPERATIONS = new Set(['DescribeTable', 'DescribeStream', 'GetShardIterator', 'GetRecords', 'ListStreams']);
const isPollerCall = (name: string) => POLLER_OPERATIONS.has(name.replace(/Refused$/, '')) || name === 'GetRecordsRecords';
const READ_OPERATIONS = ['GetItem', 'Query', 'BatchGetItem', 'TransactGetItems', 'Scan'];
const SINGLE_ITEM_WRITES = ['PutItem', 'UpdateItem', 'DeleteItem'];

export async function measureSharing(
  composition: Composition,
  backends: { DYNAMODB_ENDPOINT: string; S3_ENDPOINT: string },
  authSecret: string,
  settings: SharingSettings,
  step: (message: string) => void,
): Promise<SharingFigures> {
  // Names of this run's users: a second run on the same DynamoDB (--only) never meets the first's.
  const run = randomBytes(3).toString('hex');
  const withConsumers = await localServer(backends, authSecret, { consumers: true });
  let fanOut: FanOutLatency;
  let group: GroupFanOut;
  try {
    const api = new Api(withConsumers.url, authSecret);
    // A new poller starts at the oldest record kept: what earlier parts wrote is read (and handled) first.
    step('sharing: the stream consumers catch up with the records of the parts before');
    await settle(withConsumers.counter);
    step(`sharing: fan-out latency over ${settings.uploads} uploads, each to a new contact`);
    fanOut = await fanOutLatency(api, run, settings.uploads);
    step(`sharing: a group of ${settings.groupSides} sides, one upload`);
    group = await groupFanOut(composition, api, withConsumers.counter, run, settings.groupSides);
  } finally {
    await withConsumers.stop();
  }
  // The read bounds on a server without the consumers: the 10,000 seeded records would keep its fan-out busy.
  const withoutConsumers = await localServer(backends, authSecret, { consumers: false });
  try {
    const api = new Api(withoutConsumers.url, authSecret);
    step(`sharing: thread list reads at ${settings.threadAttachments.toLocaleString('en')} attachments; a member's GET by id`);
    const { threadList, attachmentId, sides } = await threadListReads(
      composition,
      api,
      withoutConsumers.counter,
      run,
      settings.threadAttachments,
    );
    const memberReads = await memberGetReads(api, withoutConsumers.counter, run, attachmentId, sides);
    return { fanOut, group, threadList, memberReads };
  } finally {
    await withoutConsumers.stop();
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function latency(sample: number[]): LatencyFigure {
  return { uploads: sample.length, ...spread(sample) };
}

/**
 * One uploader, a new contact per upload (so every upload changes a side
 * that has not seen this thread's activity yet): from the upload's 201 until
 * the contact's own list, filtered to unread, shows the side. Alternately the
 * contact holds no side (the fan-out creates it) or holds one it made with
 * POST, not yet active. One upload at a time.
 */
async function fanOutLatency(api: Api, run: string, uploads: number): Promise<FanOutLatency> {
  const uploader = await api.user(`share-uploader-${run}`);
  const cases = { created: [] as number[], existing: [] as number[] };
  for (let index = 0; index < uploads; index += 1) {
    const contact = await api.user(`share-contact-${run}-${index}`);
    const holdsSide = index % 2 === 1;
    if (holdsSide) await api.side(contact, { contact_id: uploader.id });
    const side = await api.side(uploader, { contact_id: contact.id });
    const { attachment, answeredAt } = await api.upload(uploader, side);
    const unread = `/v1/conversations?contact_id=${encodeURIComponent(uploader.id)}&unread=true`;
    for (;;) {
      const page = await api.expect(200, contact, 'GET', unread);
      const seen = performance.now();
      if (page.data.length > 0) {
        if (page.data[0].last_active_at < attachment.created_at)
          throw new Error(`${contact.id}'s side is unread before this upload: ${JSON.stringify(page.data[0])}`);
        (holdsSide ? cases.existing : cases.created).push(seen - answeredAt);
        break;
      }
      if (seen - answeredAt > DEADLINE_MS) throw new Error(`${contact.id}'s side never became unread after ${DEADLINE_MS} ms`);
      await sleep(FAN_OUT_POLL_MS);
    }
  }
  return {
    ...latency([...cases.created, ...cases.existing]),
    pollMs: FAN_OUT_POLL_MS,
    byCase: [
      { case: 'the contact holds no side (the fan-out creates it)', ...latency(cases.created) },
      { case: "the contact's side exists (made by POST, no activity yet)", ...latency(cases.existing) },
    ],
  };
}

/**
 * A group whose every member holds a side (each POSTs it through the API),
 * then one upload by the first member: how long until every side shows it,
 * read straight from the table (BatchGetItem of the sides, not counted), and
 * what the upload and its fan-out cost in DynamoDB calls (counted).
 */
async function groupFanOut(composition: Composition, api: Api, counter: DynamoCounter, run: string, sides: number): Promise<GroupFanOut> {
  const groupId = `bench-group-${run}`;
  const members = await Promise.all(Array.from({ length: sides }, (_, index) => api.user(`member-${run}-${index}`, [groupId])));
  const seedStarted = performance.now();
  const sideIds = new Array<string>(sides);
  await pool(sides, 8, async (index) => {
    sideIds[index] = await api.side(members[index]!, { group_id: groupId });
  });
  const seedSeconds = round((performance.now() - seedStarted) / 1000);
  const keys = members.map((member, index) => conversationKey(member.id, sideIds[index]!));
  await settle(counter);
  const sidesBefore = await sideItems(composition, keys);

  counter.reset();
  const { attachment, answeredAt } = await api.upload(members[0]!, sideIds[0]!);
  const requestOperations = counter.counts();
  let halfSidesMs: number | undefined;
  let lastSideMs: number | undefined;
  while (lastSideMs === undefined) {
    const reached = await sidesActiveSince(composition, keys, attachment.created_at as number);
    const elapsed = performance.now() - answeredAt;
    if (reached * 2 >= sides) halfSidesMs ??= elapsed;
    if (reached === sides) lastSideMs = elapsed;
    else if (elapsed > DEADLINE_MS) throw new Error(`${reached} of ${sides} sides reached after ${DEADLINE_MS} ms`);
    else await sleep(GROUP_POLL_MS);
  }
  const counts = await settle(counter);
  // What the members see: a side (not the uploader's) is unread in the member's own list.
  for (const index of [1, Math.floor(sides / 2), sides - 1]) {
    const page = await api.expect(200, members[index]!, 'GET', `/v1/conversations?group_id=${encodeURIComponent(groupId)}&unread=true`);
    if (page.data.length !== 1) throw new Error(`member ${index}'s side is not unread after the fan-out: ${JSON.stringify(page)}`);
  }
  const sideWriteUnits = sidesWriteUnits(sidesBefore, await sideItems(composition, keys));
  const operations = Object.fromEntries(Object.entries(counts).filter(([name]) => !isPollerCall(name)));
  const pollerCalls = Object.fromEntries(Object.entries(counts).filter(([name]) => isPollerCall(name)));
  return {
    sides,
    seedSeconds,
    pollMs: GROUP_POLL_MS,
    halfSidesMs: round(halfSidesMs!, 0),
    lastSideMs: round(lastSideMs, 0),
    operations,
    requestOperations,
    pollerCalls,
    itemsWritten: itemsWritten(operations),
    sideWriteUnits,
  };
}

const ACTIVITY_INDEXES: readonly string[] = [conversationIndexes.activity.name, conversationIndexes.archivedActivity.name];

/** What the fan-out's side updates cost in write units, with the activity indexes and without them (see GroupFanOut). */
function sidesWriteUnits(before: Map<string, PlainItem>, after: Map<string, PlainItem>): GroupFanOut['sideWriteUnits'] {
  const withoutActivity = (item: PlainItem) =>
    Object.fromEntries(Object.entries(item).filter(([name]) => name !== conversationIndexes.activity.sortKey));
  const olderIndexes = conversationsTable.indexes.filter((index) => !ACTIVITY_INDEXES.includes(index.name));
  let withIndexes = 0;
  let withoutIndexes = 0;
  for (const [key, old] of before) {
    const now = after.get(key);
    if (!now) throw new Error(`side ${key} is gone after the fan-out`);
    withIndexes += updateWriteUnits(old, now, conversationsTable.indexes);
    withoutIndexes += updateWriteUnits(withoutActivity(old), withoutActivity(now), olderIndexes);
  }
  return {
    withActivityIndexes: withIndexes,
    withoutActivityIndexes: withoutIndexes,
    perSide: { withActivityIndexes: round(withIndexes / before.size), withoutActivityIndexes: round(withoutIndexes / before.size) },
  };
}

/** The sides as stored, whole, by key (BatchGetItem, 100 keys a call, not counted). */
async function sideItems(composition: Composition, keys: { pk: string; sk: string }[]): Promise<Map<string, PlainItem>> {
  const table = composition.config.conversationsTable;
  const items = new Map<string, PlainItem>();
  for (let start = 0; start < keys.length; start += 100) {
    let pending: Record<string, unknown>[] = keys.slice(start, start + 100);
    while (pending.length > 0) {
      const { Responses, UnprocessedKeys } = await composition
        .use(dynamo)
        .send(new BatchGetCommand({ RequestItems: { [table]: { Keys: pending, ConsistentRead: true } } }));
      for (const item of Responses?.[table] ?? []) items.set(`${String(item.pk)}\u0000${String(item.sk)}`, item);
      pending = (UnprocessedKeys?.[table]?.Keys ?? []) as Record<string, unknown>[];
    }
  }
  return items;
}

function itemsWritten(counts: Record<string, number>): number {
  const count = (name: string) => counts[name] ?? 0;
  return SINGLE_ITEM_WRITES.reduce((sum, name) => sum + count(name), 0) + count('TransactWriteItemsItems') + count('BatchWriteItemItems');
}

/** How many of the sides (conversation keys) have last_active_at at least `since`: BatchGetItem, 100 keys a call. */
export async function sidesActiveSince(composition: Composition, keys: { pk: string; sk: string }[], since: number): Promise<number> {
  const table = composition.config.conversationsTable;
  let reached = 0;
  for (let start = 0; start < keys.length; start += 100) {
    let pending: Record<string, unknown>[] = keys.slice(start, start + 100);
    while (pending.length > 0) {
      const { Responses, UnprocessedKeys } = await composition.use(dynamo).send(
        new BatchGetCommand({
          RequestItems: { [table]: { Keys: pending, ProjectionExpression: 'last_active_at', ConsistentRead: true } },
        }),
      );
      reached += (Responses?.[table] ?? []).filter(
        (item) => typeof item.last_active_at === 'number' && item.last_active_at >= since,
      ).length;
      pending = (UnprocessedKeys?.[table]?.Keys ?? []) as Record<string, unknown>[];
    }
  }
  return reached;
}

/**
 * Waits until a whole second passes with no stream record read and no call
 * but the poller's idle ones (the consumers are done); what the counter holds then.
 */
export async function settle(counter: DynamoCounter): Promise<Record<string, number>> {
  const busy = (counts: Record<string, number>) =>
    Object.entries(counts)
      .filter(([name]) => !POLLER_OPERATIONS.has(name.replace(/Refused$/, '')))
      .reduce((sum, [, count]) => sum + count, 0);
  let before = busy(counter.counts());
  for (;;) {
    await sleep(1_000);
    const counts = counter.counts();
    if (busy(counts) === before) return counts;
    before = busy(counts);
  }
}

export async function pool(count: number, concurrency: number, work: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await work(next++);
    }),
  );
}

interface DirectSides {
  uploader: User;
  contact: User;
  uploaderSide: string;
  contactSide: string;
}

/**
 * A direct thread of two users, each holding a side, grown to 100 and then to
 * `attachments` records (half uploaded by each), written straight into the
 * table as uploads leave them (attachmentItem, the store's own item), and
 * read through the API at both sizes: each member's first page, a second
 * page, a page of 100, and the uploader's own uploads (no conversation_id).
 */
async function threadListReads(
  composition: Composition,
  api: Api,
  counter: DynamoCounter,
  run: string,
  attachments: number,
): Promise<{ threadList: ListReadFigure[]; attachmentId: string; sides: DirectSides }> {
  const uploader = await api.user(`list-a-${run}`);
  const contact = await api.user(`list-b-${run}`);
  const sides: DirectSides = {
    uploader,
    contact,
    uploaderSide: await api.side(uploader, { contact_id: contact.id }),
    contactSide: await api.side(contact, { contact_id: uploader.id }),
  };
  const createdAt = Math.floor(Date.now() / 1000) - attachments;
  const record = (index: number): AttachmentRecord => {
    const byUploader = index % 2 === 0;
    const [from, to, side] = byUploader ? [uploader, contact, sides.uploaderSide] : [contact, uploader, sides.contactSide];
    const id = newId('att');
    return {
      id,
      message_id: null,
      filename: `file-${index}.txt`,
      file_type: 'text/plain',
      file_size: 1,
      created_at: createdAt + index,
      uploaded_by: from.id,
      placement: { conversation_id: side, counterpart: { kind: 'contact', id: to.id } },
      file_key: fileKey(from.id, id, 'bench-seed'),
      scan_status: 'clean' as const,
    };
  };
  const figures: ListReadFigure[] = [];
  let seeded = 0;
  let firstId: string | undefined;
  for (const size of [...new Set([Math.min(100, attachments), attachments])]) {
    const records = Array.from({ length: size - seeded }, (_, offset) => record(seeded + offset));
    firstId ??= records[0]!.id;
    await putItems(composition.use(dynamo), composition.config.attachmentsTable, records.map(attachmentItem));
    seeded = size;
    const read = async (list: string, reader: User, path: string, limit: number) => {
      counter.reset();
      const page = await api.expect(200, reader, 'GET', path);
      const counts = counter.counts();
      figures.push({
        list,
        limit,
        threadSize: size,
        returned: page.data.length,
        itemsRead: (counts.QueryItemsRead ?? 0) + (counts.ScanItemsRead ?? 0),
        queries: (counts.Query ?? 0) + (counts.Scan ?? 0),
        otherReads: (counts.GetItem ?? 0) + (counts.BatchGetItem ?? 0) + (counts.TransactGetItems ?? 0),
      });
      return page as { data: { id: string }[] };
    };
    const thread = (side: string, limit: number, after?: string) =>
      `/v1/attachments?conversation_id=${side}&limit=${limit}${after ? `&starting_after=${after}` : ''}`;
    const first = await read('thread, first page', uploader, thread(sides.uploaderSide, 10), 10);
    await read('thread, second page (starting_after)', uploader, thread(sides.uploaderSide, 10, first.data.at(-1)!.id), 10);
    await read('thread, page of 100', uploader, thread(sides.uploaderSide, 100), 100);
    await read("thread, the other member's side", contact, thread(sides.contactSide, 10), 10);
    await read('own uploads (no conversation_id)', uploader, '/v1/attachments?limit=10', 10);
  }
  return { threadList: figures, attachmentId: firstId!, sides };
}

/**
 * GET /v1/attachments/:id of one attachment by each kind of reader, DynamoDB
 * reads counted: its uploader, the contact (holding a side), and in a group
 * thread a member with a side and one without; a stranger for contrast (404).
 */
async function memberGetReads(
  api: Api,
  counter: DynamoCounter,
  run: string,
  directId: string,
  sides: DirectSides,
): Promise<MemberReadFigure[]> {
  const groupId = `reads-group-${run}`;
  const groupUploader = await api.user(`reads-uploader-${run}`, [groupId]);
  const withSide = await api.user(`reads-member-${run}`, [groupId]);
  const withoutSide = await api.user(`reads-sideless-${run}`, [groupId]);
  const stranger = await api.user(`reads-stranger-${run}`);
  const uploaderSide = await api.side(groupUploader, { group_id: groupId });
  const memberSide = await api.side(withSide, { group_id: groupId });
  const { attachment } = await api.upload(groupUploader, uploaderSide);
  const groupAttachmentId = attachment.id as string;

  const cases: { reader: string; user: User; id: string; status: number; sideId: string | null }[] = [
    { reader: 'uploader (direct thread)', user: sides.uploader, id: directId, status: 200, sideId: sides.uploaderSide },
    { reader: 'contact, holding a side', user: sides.contact, id: directId, status: 200, sideId: sides.contactSide },
    { reader: 'group member, holding a side', user: withSide, id: groupAttachmentId, status: 200, sideId: memberSide },
    { reader: 'group member without a side', user: withoutSide, id: groupAttachmentId, status: 200, sideId: null },
    { reader: 'stranger (404)', user: stranger, id: groupAttachmentId, status: 404, sideId: null },
  ];
  const figures: MemberReadFigure[] = [];
  for (const { reader, user, id, status, sideId } of cases) {
    counter.reset();
    const answer = await api.expect(status, user, 'GET', `/v1/attachments/${id}`);
    const operations = counter.counts();
    // The reader's view names the reader's own side: the second read is what finds it.
    if (status === 200 && answer.conversation_id !== sideId)
      throw new Error(`${reader} sees conversation_id ${answer.conversation_id}, not ${sideId}`);
    figures.push({ reader, status, reads: READ_OPERATIONS.reduce((sum, name) => sum + (operations[name] ?? 0), 0), operations });
  }
  return figures;
}
