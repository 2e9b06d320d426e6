import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { population } from '../../bench/population.js';
import { putConversations } from '../../bench/seed-conversations.js';
import { Composition, outbox } from '../../shared/app.js';
import { DynamoConversationStore } from '../../shared/conversations/dynamo-store.js';
import { toItem } from '../../shared/conversations/item-codec.js';
import { LARGE_SIDE_KEY } from '../../shared/conversations/large-threads.js';
import { type Conversation, type ConversationFilter, type ListOrder, newConversation } from '../../shared/conversations/model.js';
import { isUnread } from '../../shared/conversations/read-state.js';
import { groupThreadKey, largeSideKey } from '../../shared/dynamo/keys.js';
import { newId } from '../../shared/ids.js';
import { startTestApi, type TestApi } from '../support/api.js';

// Items read per list page, through the real store against DynamoDB Local: the
// figure DynamoDB bills for, so it must not grow with the user's conversations.
const LIMIT = 10;
const USER = 'user_many';

// The population stores some mutes whose end has already passed: muted now means a mute with no end or one still ahead.
const mutedNow = (c: Conversation) => c.is_muted && (c.muted_until === null || c.muted_until > Math.floor(Date.now() / 1000));

const singleFilters: { filter: ConversationFilter; index: string; matches: (c: Conversation) => boolean }[] = [
  { filter: {}, index: 'table', matches: () => true },
  { filter: { muted: true }, index: 'by_muted', matches: mutedNow },
  { filter: { muted: false }, index: 'by_muted', matches: (c) => !mutedNow(c) },
  { filter: { unread: true }, index: 'by_unread', matches: isUnread },
  { filter: { unread: false }, index: 'by_unread', matches: (c) => !isUnread(c) },
  { filter: { archived: true }, index: 'by_archived', matches: (c) => c.archived_at !== null },
  { filter: { archived: false }, index: 'by_archived', matches: (c) => c.archived_at === null },
  { filter: { pinned: true }, index: 'by_pinned', matches: (c) => c.is_pinned },
  { filter: { pinned: false }, index: 'by_pinned', matches: (c) => !c.is_pinned },
];

/** The filters that `order=activity` reads from an index sorted by activity: limit + 1 items, as without an order. */
const activityFilters: { filter: ConversationFilter; index: string; matches: (c: Conversation) => boolean }[] = [
  { filter: {}, index: 'by_activity', matches: () => true },
  { filter: { archived: true }, index: 'by_archived_activity', matches: (c) => c.archived_at !== null },
  { filter: { archived: false }, index: 'by_archived_activity', matches: (c) => c.archived_at === null },
];

const activeAt = (c: Conversation) => c.last_active_at ?? c.created_at;
/** Newest activity first, ties by id. */
const byActivity = (a: Conversation, b: Conversation) => activeAt(b) - activeAt(a) || (a.id < b.id ? 1 : -1);

let api: TestApi;
/** The server's own configuration: its tables in the run's DynamoDB Local. */
let composition: Composition;
/**
 * The server's DynamoDB without a function's 3 s answer bound: this test counts
 * the items a page reads, and seeding 1,000 conversations on a loaded machine
 * may take longer than a function would wait.
 */
let client: DynamoDBDocumentClient;
let store: DynamoConversationStore;
const seeded: Conversation[] = [];

/**
 * The items DynamoDB answered reading, summed from each answer the client
 * gets (a Query's or Scan's ScannedCount, a GetItem's item): counted here, not
 * by the store, so a store that reads more than it counts fails.
 */
let itemsReadFromDynamodb = 0;
function countItemsRead(output: object): void {
  if ('ScannedCount' in output && typeof output.ScannedCount === 'number') itemsReadFromDynamodb += output.ScannedCount;
  else if ('Item' in output && output.Item) itemsReadFromDynamodb += 1;
  else if ('Responses' in output && output.Responses && !Array.isArray(output.Responses))
    for (const items of Object.values(output.Responses as Record<string, unknown[]>)) itemsReadFromDynamodb += items.length;
}

/** `read`'s answer, and the items DynamoDB answered reading for it. */
async function measured<T>(read: () => Promise<T>): Promise<T & { read: number }> {
  const before = itemsReadFromDynamodb;
  const answer = await read();
  return { ...answer, read: itemsReadFromDynamodb - before };
}

async function seed(count: number, seed: number) {
  const added = population(count, { seed, firstIndex: seeded.length });
  await putConversations(client, composition.config.conversationsTable, USER, added.conversations);
  seeded.push(...added.conversations);
  return added.counts;
}

/** The page the store should return: newest first (ids sort by creation), the first LIMIT that match. */
const expectedPage = (matches: (c: Conversation) => boolean) =>
  seeded
    .filter(matches)
    .map((c) => c.id)
    .sort()
    .reverse()
    .slice(0, LIMIT);

beforeAll(async () => {
  api = await startTestApi();
  composition = new Composition(api.api.config);
  const { region, dynamodbEndpoint, dynamodbCredentials, credentials } = composition.config;
  const dynamodb = new DynamoDBClient({ region, endpoint: dynamodbEndpoint, credentials: dynamodbCredentials ?? credentials });
  dynamodb.middlewareStack.add(
    (next) => async (args) => {
      const result = await next(args);
      countItemsRead(result.output);
      return result;
    },
    { step: 'initialize', name: 'countItemsRead' },
  );
  client = DynamoDBDocumentClient.from(dynamodb);
  store = new DynamoConversationStore(client, composition.config.conversationsTable, composition.use(outbox));
});
afterAll(async () => {
  client?.destroy();
  composition?.destroy();
  await api?.close();
});

describe('a list page reads at most limit + 1 items whatever the number of conversations', () => {
  const readsAt = new Map<string, number[]>();

  // Twice the conversations, the same items read: the bench measures 1,000 to 100,000 (docs/performance.md).
  for (const total of [500, 1_000]) {
    it(`with ${total} conversations, no filter and each single flag filter (unread and muted at request time included) read at most ${LIMIT + 1} items from their index`, async () => {
      const added = await seed(total - seeded.length, total);
      expect(seeded).toHaveLength(total);
      expect(added.endedMutes).toBeGreaterThan(0);
      // The first muted list after mutes ended also reads those, once, and writes them back.
      const first = await measured(() => store.list(USER, { muted: false }, { limit: LIMIT }));
      expect(first.page.data.map((c) => c.id)).toEqual(expectedPage((c) => !mutedNow(c)));
      expect(first.read).toBeLessThanOrEqual(LIMIT + 1 + added.endedMutes);
      for (const { filter, index, matches } of singleFilters) {
        const { page, cost, read } = await measured(() => store.list(USER, filter, { limit: LIMIT }));
        expect(
          page.data.map((c) => c.id),
          JSON.stringify(filter),
        ).toEqual(expectedPage(matches));
        expect(cost.index, JSON.stringify(filter)).toBe(index);
        expect(read, JSON.stringify(filter)).toBeLessThanOrEqual(LIMIT + 1);
        const key = JSON.stringify(filter);
        readsAt.set(key, [...(readsAt.get(key) ?? []), read]);
      }
    });

    it(`with ${total} conversations, order=activity alone and with archived reads at most ${LIMIT + 1} items, on the first page and after a cursor`, async () => {
      expect(seeded).toHaveLength(total);
      for (const { filter, index, matches } of activityFilters) {
        const expected = seeded.filter(matches).sort(byActivity);
        const order = { by: 'activity', pinnedFirst: false } as const;
        const first = await measured(() => store.list(USER, filter, { limit: LIMIT }, order));
        expect(
          first.page.data.map((c) => c.id),
          JSON.stringify(filter),
        ).toEqual(expected.slice(0, LIMIT).map((c) => c.id));
        expect(first.cost.index).toBe(index);
        expect(first.read, JSON.stringify(filter)).toBeLessThanOrEqual(LIMIT + 1);
        // Page 3 of the walk: the cursor is the conversation the client holds and the activity time it shows.
        const cursor = expected[2 * LIMIT - 1]!;
        const later = await measured(() =>
          store.list(USER, filter, { limit: LIMIT, startingAfter: cursor.id }, { ...order, cursorActiveAt: activeAt(cursor) }),
        );
        expect(later.page.data.map((c) => c.id)).toEqual(expected.slice(2 * LIMIT, 3 * LIMIT).map((c) => c.id));
        expect(later.read, JSON.stringify(filter)).toBeLessThanOrEqual(LIMIT + 1);
        const key = `activity ${JSON.stringify(filter)}`;
        readsAt.set(key, [...(readsAt.get(key) ?? []), first.read]);
      }
    });
  }

  it('order=activity with pinned_first reads the pinned conversations, then limit + 1 of the rest and the pinned ones among them', async () => {
    const pinned = seeded.filter((c) => c.is_pinned);
    expect(pinned.length).toBeGreaterThan(LIMIT);
    const expected = [...pinned.sort(byActivity), ...seeded.filter((c) => !c.is_pinned).sort(byActivity)];
    const order = { by: 'activity', pinnedFirst: true } as const;
    const first = await measured(() => store.list(USER, {}, { limit: LIMIT }, order));
    expect(first.page.data.map((c) => c.id)).toEqual(expected.slice(0, LIMIT).map((c) => c.id));
    expect(first.read).toBeLessThanOrEqual(pinned.length);
    // Across the boundary: the pinned set again, then the rest with the pinned ones it skips, and the cursor's read.
    const cursor = expected[pinned.length - 3]!;
    const across = await measured(() =>
      store.list(USER, {}, { limit: LIMIT, startingAfter: cursor.id }, { ...order, cursorActiveAt: activeAt(cursor) }),
    );
    expect(across.page.data.map((c) => c.id)).toEqual(expected.slice(pinned.length - 2, pinned.length - 2 + LIMIT).map((c) => c.id));
    expect(across.read).toBeLessThanOrEqual(1 + pinned.length + LIMIT + 1 + pinned.length);
  });

  it('reads the same number of items at 1,000 conversations as at 500', () => {
    expect(readsAt.size).toBe(singleFilters.length + activityFilters.length);
    for (const [filter, reads] of readsAt) expect(reads, filter).toEqual([reads[0], reads[0]]);
  });

  it('a pair of filters walks only the chosen index, never the whole table', async () => {
    const muted = seeded.filter((c) => c.is_muted);
    const { page, cost, read } = await measured(() => store.list(USER, { muted: true, archived: true }, { limit: LIMIT }));
    expect(page.data.map((c) => c.id)).toEqual(expectedPage((c) => mutedNow(c) && c.archived_at !== null));
    expect(cost.index).toBe('by_muted');
    expect(read).toBeLessThanOrEqual(muted.length);
  });
});

describe('a token that lists large groups', () => {
  const OTHER = 'user_with_large_groups';
  const LARGE = ['large-1', 'large-2', 'large-3', 'large-4'];
  /** Later than every seeded conversation's activity: each large side leads the activity order. */
  const THREAD_ACTIVE_AT = 4_000_000_000;

  it(`reads at most limit + 1 + 3 × the user's large sides per page (${LIMIT + 1 + 3 * LARGE.length} here) where a list's own bound is limit + 1`, async () => {
    await putConversations(
      client,
      composition.config.conversationsTable,
      OTHER,
      population(300, { seed: 34, firstIndex: 0 }).conversations,
    );
    const table = composition.config.conversationsTable;
    for (const [index, groupId] of LARGE.entries()) {
      const side = newConversation(newId('conv'), { kind: 'group', id: groupId }, 1_800_000_000 + index);
      await client.send(new PutCommand({ TableName: table, Item: { ...toItem(OTHER, side), [LARGE_SIDE_KEY]: largeSideKey(OTHER) } }));
      const thread = { ...groupThreadKey(groupId), group_id: groupId, large_since: 1, last_active_at: THREAD_ACTIVE_AT + index };
      await client.send(new PutCommand({ TableName: table, Item: thread }));
    }
    const groups = new Set(LARGE);
    const orders: ListOrder[] = [{ by: 'created' }, { by: 'activity', pinnedFirst: false }];
    // The lists whose own bound is limit + 1 (one index, nothing filtered): each single filter in creation order, activity order alone and with archived.
    const single: [ListOrder, ConversationFilter][] = [
      ...[{}, { unread: true }, { unread: false }, { archived: false }, { pinned: false }].map(
        (filter): [ListOrder, ConversationFilter] => [orders[0]!, filter],
      ),
      [orders[1]!, {}],
      [orders[1]!, { archived: false }],
    ];
    for (const [order, filter] of single) {
      const { read, page } = await measured(() => store.list(OTHER, filter, { limit: LIMIT }, order, groups));
      const what = `${JSON.stringify(filter)} ${order.by}`;
      expect(read, what).toBeLessThanOrEqual(LIMIT + 1 + 3 * LARGE.length);
      expect(page.data.length, what).toBe(LIMIT);
    }
    // The large sides lead the activity order with their threads' activity, newest first, and read unread.
    const { page } = await measured(() => store.list(OTHER, { unread: true }, { limit: LIMIT }, orders[1], groups));
    expect(page.data.slice(0, LARGE.length).map((side) => [side.group_id, side.last_active_at])).toEqual(
      [...LARGE.entries()].reverse().map(([index, groupId]) => [groupId, THREAD_ACTIVE_AT + index]),
    );
  });
});
