import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { population } from '../../bench/population.js';
import { App } from '../../shared/app.js';
import { DynamoConversationStore } from '../../shared/conversations/dynamo-store.js';
import { putConversations } from '../../bench/seed-conversations.js';
import type { Conversation, ConversationFilter } from '../../shared/conversations/model.js';
import { startTestApi, type TestApi } from '../support/api.js';

// Items read per list page, through the real store against DynamoDB Local: the
// figure DynamoDB bills for, so it must not grow with the user's conversations.
const LIMIT = 10;
const USER = 'user_many';

const singleFilters: { filter: ConversationFilter; index: string; matches: (c: Conversation) => boolean }[] = [
  { filter: {}, index: 'table', matches: () => true },
  { filter: { muted: true }, index: 'by_muted', matches: (c) => c.is_muted },
  { filter: { muted: false }, index: 'by_muted', matches: (c) => !c.is_muted },
  { filter: { archived: true }, index: 'by_archived', matches: (c) => c.archived_at !== null },
  { filter: { archived: false }, index: 'by_archived', matches: (c) => c.archived_at === null },
  { filter: { pinned: true }, index: 'by_pinned', matches: (c) => c.is_pinned },
  { filter: { pinned: false }, index: 'by_pinned', matches: (c) => !c.is_pinned },
];

let api: TestApi;
/** The server's own configuration: its tables in the run's DynamoDB Local. */
let app: App;
let store: DynamoConversationStore;
const seeded: Conversation[] = [];

async function seed(count: number, seed: number) {
  const { conversations } = population(count, { seed, firstIndex: seeded.length });
  await putConversations(app.dynamo, app.config.conversationsTable, USER, conversations);
  seeded.push(...conversations);
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
  app = new App(api.api.config);
  store = new DynamoConversationStore(app.dynamo, app.config.conversationsTable);
});
afterAll(async () => {
  app?.destroy();
  await api?.close();
});

describe('a list page reads at most limit + 1 items whatever the number of conversations', () => {
  const readsAt = new Map<string, number[]>();

  for (const total of [1_000, 2_000]) {
    it(`with ${total} conversations, no filter and each single flag filter read at most ${LIMIT + 1} items from their index`, async () => {
      await seed(total - seeded.length, total);
      expect(seeded).toHaveLength(total);
      for (const { filter, index, matches } of singleFilters) {
        const { page, cost } = await store.list(USER, filter, { limit: LIMIT });
        expect(page.data.map((c) => c.id), JSON.stringify(filter)).toEqual(expectedPage(matches));
        expect(cost.index, JSON.stringify(filter)).toBe(index);
        expect(cost.itemsRead, JSON.stringify(filter)).toBeLessThanOrEqual(LIMIT + 1);
        const key = JSON.stringify(filter);
        readsAt.set(key, [...(readsAt.get(key) ?? []), cost.itemsRead]);
      }
    });
  }

  it('reads the same number of items at 2,000 conversations as at 1,000', () => {
    expect(readsAt.size).toBe(singleFilters.length);
    for (const [filter, reads] of readsAt) expect(reads, filter).toEqual([reads[0], reads[0]]);
  });

  it('a pair of filters walks only the chosen index, never the whole table', async () => {
    const muted = seeded.filter((c) => c.is_muted);
    const { page, cost } = await store.list(USER, { muted: true, archived: true }, { limit: LIMIT });
    expect(page.data.map((c) => c.id)).toEqual(expectedPage((c) => c.is_muted && c.archived_at !== null));
    expect(cost.index).toBe('by_muted');
    expect(cost.itemsRead).toBeLessThanOrEqual(muted.length);
  });
});
