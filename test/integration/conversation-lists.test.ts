import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';

let t: TestApi;
const USER = 'lister';
/** Every conversation of USER, oldest first, with the state each was given. */
const made: { id: string; muted: boolean; archived: boolean; pinned: boolean; group: string | null; contact: string | null }[] = [];

beforeAll(async () => {
  t = await startTestApi();
  // 30 conversations with overlapping states, so combined filters have something to separate.
  for (let i = 0; i < 30; i++) {
    const group = i % 5 === 0 ? (i % 10 === 0 ? 'g_even' : 'g_odd') : null;
    const response = await t.call(USER, 'POST', '/v1/conversations', {
      form: group ? { group_id: `${group}_${i}` } : { contact_id: `c_${i}` },
      ...(group ? { groups: [`${group}_${i}`] } : {}),
    });
    const state = { muted: i % 2 === 0, archived: i % 3 === 0, pinned: i % 4 === 0 };
    await t.call(USER, 'PUT', `/v1/conversations/${response.body.id}`, {
      json: {
        is_muted: state.muted,
        is_pinned: state.pinned,
        ...(state.archived ? { archived_at: 1_700_000_000 + i } : {}),
      },
    });
    made.push({ id: response.body.id, ...state, group: response.body.group_id, contact: response.body.contact_id });
  }
  // Someone else's conversations must never show up.
  for (let i = 0; i < 5; i++) await t.call('other_user', 'POST', '/v1/conversations', { form: { contact_id: `c_${i}` } });
});
afterAll(() => t.close());

const newestFirst = () => [...made].reverse();
const list = async (query: string) => {
  const response = await t.call(USER, 'GET', `/v1/conversations${query}`);
  expect(response.status).toBe(200);
  return response.body as { has_more: boolean; data: { id: string }[] };
};
const ids = (page: { data: { id: string }[] }) => page.data.map((c) => c.id);

/** Follows starting_after to the end, checking has_more on every page. */
async function walk(query: string, limit: number): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await list(`?limit=${limit}${query}${cursor ? `&starting_after=${cursor}` : ''}`);
    seen.push(...ids(page));
    expect(page.data.length).toBeLessThanOrEqual(limit);
    if (!page.has_more) return seen;
    expect(page.data).toHaveLength(limit);
    cursor = page.data.at(-1)!.id;
  }
}

describe('GET /v1/conversations', () => {
  it('lists ten conversations newest first by default, with has_more', async () => {
    const page = await list('');
    expect(ids(page)).toEqual(
      newestFirst()
        .slice(0, 10)
        .map((c) => c.id),
    );
    expect(page.has_more).toBe(true);
  });

  it('pages forward with starting_after through every conversation exactly once', async () => {
    expect(await walk('', 7)).toEqual(newestFirst().map((c) => c.id));
  });

  it('says has_more false on a page that ends exactly at the last conversation', async () => {
    const page = await list('?limit=30');
    expect(page.data).toHaveLength(30);
    expect(page.has_more).toBe(false);
  });

  it('pages back with ending_before, newest first within the page', async () => {
    const all = newestFirst().map((c) => c.id);
    const back = await list(`?limit=5&ending_before=${all[12]}`);
    expect(ids(back)).toEqual(all.slice(7, 12));
    expect(back.has_more).toBe(true);
    const first = await list(`?limit=5&ending_before=${all[5]}`);
    expect(ids(first)).toEqual(all.slice(0, 5));
    expect(first.has_more).toBe(false);
  });

  it('keeps a cursor working after its conversation was deleted', async () => {
    const extra = await t.call('cursor_user', 'POST', '/v1/conversations', { form: { contact_id: 'a' } });
    const middle = await t.call('cursor_user', 'POST', '/v1/conversations', { form: { contact_id: 'b' } });
    await t.call('cursor_user', 'POST', '/v1/conversations', { form: { contact_id: 'c' } });
    await t.call('cursor_user', 'DELETE', `/v1/conversations/${middle.body.id}`);
    const page = await t.call('cursor_user', 'GET', `/v1/conversations?starting_after=${middle.body.id}`);
    expect(ids(page.body)).toEqual([extra.body.id]);
  });

  it.each([
    ['muted=true', (c: (typeof made)[number]) => c.muted],
    ['muted=false', (c: (typeof made)[number]) => !c.muted],
    ['archived=true', (c: (typeof made)[number]) => c.archived],
    ['archived=false', (c: (typeof made)[number]) => !c.archived],
    ['pinned=true', (c: (typeof made)[number]) => c.pinned],
    ['pinned=false', (c: (typeof made)[number]) => !c.pinned],
    ['muted=true&archived=false', (c: (typeof made)[number]) => c.muted && !c.archived],
    ['pinned=false&muted=false&archived=true', (c: (typeof made)[number]) => !c.pinned && !c.muted && c.archived],
    ['pinned=true&archived=true', (c: (typeof made)[number]) => c.pinned && c.archived],
  ])('filters %s, across pages with no short page', async (query, keep) => {
    expect(await walk(`&${query}`, 3)).toEqual(
      newestFirst()
        .filter(keep)
        .map((c) => c.id),
    );
  });

  it('filters by group_id and by contact_id, alone and with a flag', async () => {
    const grouped = made.find((c) => c.group)!;
    expect(ids(await list(`?group_id=${grouped.group}`))).toEqual([grouped.id]);
    expect(ids(await list(`?group_id=${grouped.group}&muted=${!grouped.muted}`))).toEqual([]);
    const withContact = made.find((c) => c.contact)!;
    expect(ids(await list(`?contact_id=${withContact.contact}&muted=${withContact.muted}`))).toEqual([withContact.id]);
    expect(ids(await list('?group_id=no_such_group'))).toEqual([]);
  });

  it("never shows another user's conversations", async () => {
    const mine = new Set(made.map((c) => c.id));
    expect((await walk('', 100)).every((id) => mine.has(id))).toBe(true);
    const theirs = await t.call('other_user', 'GET', '/v1/conversations?contact_id=c_1');
    expect(theirs.body.data).toHaveLength(1);
    expect(mine.has(theirs.body.data[0].id)).toBe(false);
  });

  it.each(['0', '101', '-1', 'abc', '1.5', ''])('refuses limit=%s', async (limit) => {
    const response = await t.call(USER, 'GET', `/v1/conversations?limit=${limit}`);
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ type: 'invalid_request_error', code: 'parameter_invalid', param: 'limit' });
  });

  it('accepts limit=100 and limit=1', async () => {
    expect((await list('?limit=100')).data).toHaveLength(30);
    expect((await list('?limit=1')).data).toHaveLength(1);
  });

  it('refuses both cursors together', async () => {
    const [a, b] = made;
    const response = await t.call(USER, 'GET', `/v1/conversations?starting_after=${a!.id}&ending_before=${b!.id}`);
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('parameter_invalid');
  });

  it.each([
    ['muted=yes', 'muted'],
    ['archived=1', 'archived'],
    ['pinned=TRUE', 'pinned'],
    ['starting_after=nonsense', 'starting_after'],
    ['group_id=', 'group_id'],
    ['limit=5&limit=6', 'limit'],
  ])('refuses the query %s', async (query, param) => {
    const response = await t.call(USER, 'GET', `/v1/conversations?${query}`);
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'parameter_invalid', param });
  });

  it('refuses an unknown query parameter by name', async () => {
    const response = await t.call(USER, 'GET', '/v1/conversations?sort=asc');
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'parameter_unknown', param: 'sort' });
  });
});
