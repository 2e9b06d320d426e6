import { PutCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Composition, dynamo } from '../../shared/app.js';
import { backfillActivityPlaces } from '../../shared/conversations/activity-backfill.js';
import { toItem } from '../../shared/conversations/item-codec.js';
import { newConversation } from '../../shared/conversations/model.js';
import { newId } from '../../shared/ids.js';
import { uploadForm } from '../support/attachments.js';
import { clockedApi } from '../support/conversations.js';

// Time is the test's: creation and uploads (the activity) are stamped with it, so ties of one second are made on purpose.
const { clock, t, put } = clockedApi(1_810_000_000);

interface Shown {
  id: string;
  created_at: number;
  last_active_at: number | null;
  is_pinned: boolean;
  archived_at: number | null;
  is_muted: boolean;
  group_id: string | null;
  contact_id: string | null;
  last_opened_at: number | null;
}
interface ListPage {
  has_more: boolean;
  data: Shown[];
}

const activeAt = (c: Shown) => c.last_active_at ?? c.created_at;
/** The contract's order: newest activity first, ties by id (the greater first). */
const byActivity = (a: Shown, b: Shown) => activeAt(b) - activeAt(a) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
const ids = (list: Shown[]) => list.map((c) => c.id);

let contacts = 0;
/** The groups each user's conversations are with: their token lists them. */
const groupsOf = new Map<string, string[]>();
async function create(userId: string, group?: string): Promise<string> {
  if (group) groupsOf.set(userId, [...(groupsOf.get(userId) ?? []), group]);
  const response = await t().call(
    userId,
    'POST',
    '/v1/conversations',
    group ? { form: { group_id: group }, groups: [group] } : { form: { contact_id: `contact_${contacts++}` } },
  );
  expect(response.status).toBe(201);
  return response.body.id;
}

/** An upload by the user into their conversation: its activity moves to the clock's time. */
async function touch(userId: string, id: string) {
  const body = uploadForm({ bytes: 'x', filename: 'a.txt', type: 'text/plain' }, { conversation_id: id });
  const response = await t().call(userId, 'POST', '/v1/attachments', { body, groups: groupsOf.get(userId) ?? [] });
  expect(response.status, response.text).toBe(201);
}

async function list(userId: string, query: string): Promise<ListPage> {
  const response = await t().call(userId, 'GET', `/v1/conversations?${query}`);
  expect(response.status, response.text).toBe(200);
  return response.body;
}

/** Every conversation of the user as stored now (one creation-order page of up to 100). */
const everything = async (userId: string) => (await list(userId, 'limit=100')).data;

/** The cursor of a conversation the client holds: its id and its activity time as shown. */
const startingAfter = (c: Shown) => `&starting_after=${c.id}&cursor_active_at=${activeAt(c)}`;
const endingBefore = (c: Shown) => `&ending_before=${c.id}&cursor_active_at=${activeAt(c)}`;

/** Follows starting_after (with the activity time held) to the end, checking has_more on every page. */
async function walk(userId: string, query: string, limit: number): Promise<string[]> {
  const seen: string[] = [];
  let cursor = '';
  for (;;) {
    const page = await list(userId, `limit=${limit}&order=activity${query}${cursor}`);
    seen.push(...ids(page.data));
    if (!page.has_more) return seen;
    expect(page.data).toHaveLength(limit);
    cursor = startingAfter(page.data.at(-1)!);
  }
}

describe('GET /v1/conversations?order=activity', () => {
  const USER = 'inbox_owner';
  let all: Shown[] = [];

  it('lists newest activity first (last_active_at, else created_at), ties by id, while the default stays creation order', async () => {
    // Created over time, three of them in one second (a tie), then some active later, two of those in one second.
    const made: string[] = [];
    for (let i = 0; i < 12; i++) {
      if (i % 4 !== 1) clock.now += 1;
      made.push(await create(USER, i % 5 === 0 ? `grp_${i}` : undefined));
    }
    for (const [index, step] of [
      [2, 1],
      [7, 0],
      [0, 1],
      [9, 0],
      [4, 3],
    ] as const) {
      clock.now += step;
      await touch(USER, made[index]!);
    }
    await put(USER, made[3]!, { is_pinned: true });
    await put(USER, made[0]!, { is_pinned: true, archived_at: clock.now });
    await put(USER, made[5]!, { archived_at: clock.now, is_muted: true });
    await put(USER, made[8]!, { is_muted: true });
    await put(USER, made[10]!, { last_opened_at: clock.now });
    // Marked unread: an upload of one's own leaves it read.
    await put(USER, made[2]!, { last_opened_at: null });
    await put(USER, made[9]!, { last_opened_at: null });
    all = await everything(USER);
    expect(all).toHaveLength(12);
    expect(new Set(all.map(activeAt)).size).toBeLessThan(12);

    const page = await list(USER, 'order=activity&limit=100');
    expect(ids(page.data)).toEqual(ids([...all].sort(byActivity)));
    expect(page.has_more).toBe(false);
    expect(ids((await list(USER, 'limit=100')).data)).toEqual([...made].reverse());
    expect(ids((await list(USER, 'limit=100&order=created')).data)).toEqual([...made].reverse());
  });

  it('pages forward with starting_after, and back with ending_before, through every conversation once', async () => {
    const expected = ids([...all].sort(byActivity));
    for (const limit of [1, 3, 5]) expect(await walk(USER, '', limit)).toEqual(expected);
    // A cursor by id alone takes the conversation's place now (it has not moved here).
    const byId = await list(USER, `order=activity&limit=4&starting_after=${expected[3]}`);
    expect(ids(byId.data)).toEqual(expected.slice(4, 8));
    const sorted = [...all].sort(byActivity);
    const back = await list(USER, `order=activity&limit=4${endingBefore(sorted[9]!)}`);
    expect(ids(back.data)).toEqual(expected.slice(5, 9));
    expect(back.has_more).toBe(true);
    const head = await list(USER, `order=activity&limit=4${endingBefore(sorted[3]!)}`);
    expect(ids(head.data)).toEqual(expected.slice(0, 3));
    expect(head.has_more).toBe(false);
  });

  it('combines with every filter, paging within the filtered list', async () => {
    const cases: [string, (c: Shown) => boolean][] = [
      ['&archived=true', (c) => c.archived_at !== null],
      ['&archived=false', (c) => c.archived_at === null],
      ['&pinned=true', (c) => c.is_pinned],
      ['&pinned=false', (c) => !c.is_pinned],
      ['&muted=true', (c) => c.is_muted],
      ['&muted=false&archived=false', (c) => !c.is_muted && c.archived_at === null],
      ['&unread=true', (c) => c.last_active_at !== null && (c.last_opened_at === null || c.last_opened_at < c.last_active_at)],
      ['&archived=false&pinned=true', (c) => c.archived_at === null && c.is_pinned],
      [`&group_id=${all.find((c) => c.group_id)!.group_id}`, (c) => c.group_id === all.find((x) => x.group_id)!.group_id],
      [
        `&contact_id=${all.find((c) => c.contact_id)!.contact_id}&pinned=false`,
        (c) => c.contact_id === all.find((x) => x.contact_id)!.contact_id && !c.is_pinned,
      ],
    ];
    for (const [query, matches] of cases) {
      const expected = ids(all.filter(matches).sort(byActivity));
      expect(expected.length, query).toBeGreaterThan(0);
      expect(await walk(USER, query, 2), query).toEqual(expected);
    }
  });

  it('pinned_first=true lists the pinned conversations in activity order, then the rest, and pages across the two', async () => {
    const expected = ids([...all.filter((c) => c.is_pinned).sort(byActivity), ...all.filter((c) => !c.is_pinned).sort(byActivity)]);
    for (const limit of [1, 2, 5]) expect(await walk(USER, '&pinned_first=true', limit)).toEqual(expected);
    // Back across the boundary: the page before the first unpinned one ends with the pinned ones.
    const firstUnpinned = all.find((c) => c.id === expected[2])!;
    const back = await list(USER, `order=activity&pinned_first=true&limit=3${endingBefore(firstUnpinned)}`);
    expect(ids(back.data)).toEqual(expected.slice(0, 2));
    const archived = ids([
      ...all.filter((c) => c.is_pinned && c.archived_at === null).sort(byActivity),
      ...all.filter((c) => !c.is_pinned && c.archived_at === null).sort(byActivity),
    ]);
    expect(await walk(USER, '&pinned_first=true&archived=false', 2)).toEqual(archived);
  });

  it('never repeats on a later page a conversation whose activity moved while the client paged, and skips none that did not move', async () => {
    const before = ids([...all].sort(byActivity));
    const first = await list(USER, 'order=activity&limit=4');
    expect(ids(first.data)).toEqual(before.slice(0, 4));
    // One already shown moves to the head; one not yet shown moves too (the client learns of it from the feed).
    clock.now += 5;
    await touch(USER, before[2]!);
    await touch(USER, before[7]!);
    const cursor = first.data.at(-1)!;
    // The cursor itself moves: its place as the client saw it still holds.
    await touch(USER, cursor.id);
    const rest: string[] = [];
    let next = startingAfter(cursor);
    for (;;) {
      const page = await list(USER, `order=activity&limit=3${next}`);
      rest.push(...ids(page.data));
      if (!page.has_more) break;
      next = startingAfter(page.data.at(-1)!);
    }
    expect(rest).toEqual(before.slice(4).filter((id) => id !== before[7]));
    all = await everything(USER);
  });

  it('refuses a bad order, pinned_first without order=activity, and cursor_active_at without a cursor or that order, in the error shape', async () => {
    const some = all[0]!.id;
    const refusals: [string, string][] = [
      ['order=newest', 'order'],
      ['order=', 'order'],
      ['order=ACTIVITY', 'order'],
      ['pinned_first=yes&order=activity', 'pinned_first'],
      ['pinned_first=true', 'pinned_first'],
      ['pinned_first=true&order=created', 'pinned_first'],
      ['order=activity&cursor_active_at=12', 'cursor_active_at'],
      [`starting_after=${some}&cursor_active_at=12`, 'cursor_active_at'],
      [`order=activity&starting_after=${some}&cursor_active_at=-1`, 'cursor_active_at'],
      [`order=activity&starting_after=${some}&cursor_active_at=soon`, 'cursor_active_at'],
    ];
    for (const [query, param] of refusals) {
      const response = await t().call(USER, 'GET', `/v1/conversations?${query}`);
      expect(response.status, query).toBe(400);
      expect(response.body.error, query).toMatchObject({ type: 'invalid_request_error', code: 'parameter_invalid', param });
    }
  });

  it('pages on from a deleted conversation with cursor_active_at, and refuses its id alone with a 400', async () => {
    const sorted = [...all].sort(byActivity);
    const gone = sorted[5]!;
    expect((await t().call(USER, 'DELETE', `/v1/conversations/${gone.id}`)).status).toBe(200);
    const page = await list(USER, `order=activity&limit=3${startingAfter(gone)}`);
    expect(ids(page.data)).toEqual(ids(sorted.slice(6, 9)));
    const refused = await t().call(USER, 'GET', `/v1/conversations?order=activity&starting_after=${gone.id}`);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'parameter_invalid', param: 'starting_after' });
    const pinnedFirst = await t().call(USER, 'GET', `/v1/conversations?order=activity&pinned_first=true${startingAfter(gone)}`);
    expect(pinnedFirst.status).toBe(400);
    all = await everything(USER);
  });

  it("never shows another user's conversations, whatever their activity", async () => {
    await create('inbox_stranger');
    clock.now += 100;
    const theirs = await create('inbox_stranger');
    await touch('inbox_stranger', theirs);
    const mine = ids((await list(USER, 'order=activity&limit=100')).data);
    expect(new Set(mine)).toEqual(new Set(ids(all)));
    const ownCursor = await list(
      'inbox_stranger',
      `order=activity&limit=100&starting_after=${all[0]!.id}&cursor_active_at=${clock.now + 10}`,
    );
    expect(ids(ownCursor.data).every((id) => !mine.includes(id))).toBe(true);
  });
});

describe('conversations written before the activity order', () => {
  it('are not in it until the backfill gives them their place, which a second run leaves as it is', async () => {
    const composition = new Composition(t().api.config);
    try {
      const user = 'inbox_old_timer';
      const current = await create(user);
      const old = {
        ...newConversation(newId('conv'), { kind: 'contact', id: 'old_contact' }, clock.now - 1_000),
        last_active_at: clock.now + 50,
      };
      const { activity_sort: _place, ...asBefore } = toItem(user, old);
      await composition.use(dynamo).send(new PutCommand({ TableName: composition.config.conversationsTable, Item: asBefore }));
      expect(ids((await list(user, 'order=activity')).data)).toEqual([current]);
      const first = await backfillActivityPlaces(composition.use(dynamo), composition.config.conversationsTable);
      expect(first.written).toBeGreaterThanOrEqual(1);
      expect(ids((await list(user, 'order=activity')).data)).toEqual([old.id, current]);
      expect(ids((await list(user, 'order=activity&archived=false')).data)).toEqual([old.id, current]);
      expect((await backfillActivityPlaces(composition.use(dynamo), composition.config.conversationsTable)).written).toBe(0);
    } finally {
      composition.destroy();
    }
  });
});

describe('paging in activity order while activity moves (property)', () => {
  let run = 0;
  it('never repeats a conversation on a later page and never skips one whose activity did not move', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          count: fc.integer({ min: 3, max: 9 }),
          limit: fc.integer({ min: 1, max: 4 }),
          pinnedFirst: fc.boolean(),
          pinned: fc.array(fc.nat(8), { maxLength: 3 }),
          // Between two pages: which conversations move (an index into the list as it stood), and whether the clock ticks.
          moves: fc.array(fc.array(fc.record({ index: fc.nat(8), tick: fc.boolean() }), { maxLength: 3 }), { minLength: 1, maxLength: 6 }),
        }),
        async ({ count, limit, pinnedFirst, pinned, moves }) => {
          const user = `pager_${run++}`;
          const made: string[] = [];
          for (let i = 0; i < count; i++) {
            if (i % 2 === 0) clock.now += 1;
            made.push(await create(user));
          }
          for (const index of new Set(pinned)) if (index < count) await put(user, made[index]!, { is_pinned: true });
          const query = `order=activity&limit=${limit}${pinnedFirst ? '&pinned_first=true' : ''}`;
          const held = new Map((await everything(user)).map((c) => [c.id, c]));
          const initial = [...held.values()];
          const moved = new Set<string>();
          const seen: string[] = [];
          let page = await list(user, query);
          for (let step = 0; ; step++) {
            seen.push(...ids(page.data));
            for (const c of page.data) held.set(c.id, c);
            if (!page.has_more) break;
            for (const move of moves[step % moves.length]!) {
              if (move.tick) clock.now += 1;
              const id = made[move.index % count]!;
              await touch(user, id);
              moved.add(id);
            }
            page = await list(user, `${query}${startingAfter(held.get(page.data.at(-1)!.id)!)}`);
          }
          expect(new Set(seen).size, 'a conversation repeated').toBe(seen.length);
          for (const c of initial) if (!moved.has(c.id)) expect(seen, `${c.id} skipped`).toContain(c.id);
          // What was shown is in the order, each page as it stood: the unmoved ones keep the first listing's order.
          const unmoved = seen.filter((id) => !moved.has(id));
          const expectedOrder = (
            pinnedFirst
              ? [...initial.filter((c) => c.is_pinned).sort(byActivity), ...initial.filter((c) => !c.is_pinned).sort(byActivity)]
              : [...initial].sort(byActivity)
          )
            .map((c) => c.id)
            .filter((id) => !moved.has(id));
          expect(unmoved).toEqual(expectedOrder);
        },
      ),
      { numRuns: 25, seed: 20261128 },
    );
  });
});
