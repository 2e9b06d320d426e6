import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clockedApi } from '../support/conversations.js';

// The server's clock is the test's: a mute ends because the test moves time, not because it sleeps.
const { clock, t, create: conversation, put, get, ids } = clockedApi(1_800_000_000);

const mutedIds = (userId: string, muted: boolean) => ids(userId, `muted=${muted}`);

describe('mute until a time', () => {
  it('muted_until mutes until then, and from that second on reads unmuted without any write', async () => {
    const id = await conversation('muter');
    const muted = await put('muter', id, { muted_until: clock.now + 3_600 });
    expect(muted.body).toMatchObject({ is_muted: true, muted_until: clock.now + 3_600 });
    expect(await mutedIds('muter', true)).toEqual([id]);
    expect(await mutedIds('muter', false)).toEqual([]);

    clock.now += 3_599;
    expect(await get('muter', id)).toMatchObject({ is_muted: true, muted_until: clock.now + 1 });
    expect(await mutedIds('muter', true)).toEqual([id]);

    clock.now += 1;
    expect(await get('muter', id)).toMatchObject({ is_muted: false, muted_until: null });
    // muted=false first: the ended mute is still stored as a mute, and must be listed anyway.
    expect(await mutedIds('muter', false)).toEqual([id]);
    expect(await mutedIds('muter', true)).toEqual([]);
    // Asked again (after the list wrote the ended mute back), the answer is the same.
    expect(await mutedIds('muter', true)).toEqual([]);
    expect(await mutedIds('muter', false)).toEqual([id]);
    expect(await get('muter', id)).toMatchObject({ is_muted: false, muted_until: null });
  });

  it('is_muted=true mutes with no end; is_muted=false or an empty muted_until unmutes', async () => {
    const id = await conversation('muter2');
    expect((await put('muter2', id, { muted_until: clock.now + 60 })).body.muted_until).toBe(clock.now + 60);
    expect((await put('muter2', id, { is_muted: true })).body).toMatchObject({ is_muted: true, muted_until: null });
    clock.now += 1_000_000;
    expect(await get('muter2', id)).toMatchObject({ is_muted: true, muted_until: null });
    expect((await put('muter2', id, { is_muted: false })).body).toMatchObject({ is_muted: false, muted_until: null });
    await put('muter2', id, { muted_until: clock.now + 60 });
    const form = await t().call('muter2', 'PUT', `/v1/conversations/${id}`, { form: { muted_until: '' } });
    expect(form.body).toMatchObject({ is_muted: false, muted_until: null });
    await put('muter2', id, { muted_until: clock.now + 60 });
    expect((await put('muter2', id, { muted_until: null })).body).toMatchObject({ is_muted: false, muted_until: null });
    expect(await mutedIds('muter2', false)).toEqual([id]);
  });

  it('a muted_until at or before now is no mute; with is_muted=true it is a contradiction', async () => {
    const id = await conversation('muter3');
    expect((await put('muter3', id, { muted_until: clock.now })).body).toMatchObject({ is_muted: false, muted_until: null });
    expect((await put('muter3', id, { is_muted: true, muted_until: clock.now + 1 })).body).toMatchObject({
      is_muted: true,
      muted_until: clock.now + 1,
    });
    expect((await put('muter3', id, { is_muted: false, muted_until: clock.now - 5 })).body).toMatchObject({ is_muted: false });
  });

  it('refuses a pair of is_muted and muted_until that contradict, and changes nothing', async () => {
    const id = await conversation('contrarian');
    await put('contrarian', id, { muted_until: clock.now + 100, is_pinned: true });
    const before = await get('contrarian', id);
    const contradictions: Record<string, unknown>[] = [
      { is_muted: false, muted_until: clock.now + 10 },
      { is_muted: true, muted_until: null },
      { is_muted: true, muted_until: clock.now },
      { is_muted: true, muted_until: clock.now - 1, is_pinned: false },
    ];
    for (const json of contradictions) {
      const response = await put('contrarian', id, json);
      expect(response.status, JSON.stringify(json)).toBe(400);
      expect(response.body.error).toMatchObject({ type: 'invalid_request_error', code: 'parameter_invalid', param: 'muted_until' });
    }
    const form = await t().call('contrarian', 'PUT', `/v1/conversations/${id}`, { form: { is_muted: 'true', muted_until: '' } });
    expect(form.status).toBe(400);
    expect(await get('contrarian', id)).toEqual(before);
  });

  it('any pair of is_muted and muted_until is either refused or leaves exactly the mute it asks for', async () => {
    const id = await conversation('pairs');
    await fc.assert(
      fc.asyncProperty(
        fc.option(fc.boolean(), { nil: undefined }),
        fc.option(fc.option(fc.integer({ min: -100, max: 100 }), { nil: null }), { nil: undefined }),
        async (isMuted, offset) => {
          await put('pairs', id, { is_muted: false });
          const json = {
            ...(isMuted === undefined ? {} : { is_muted: isMuted }),
            ...(offset === undefined ? {} : { muted_until: offset === null ? null : clock.now + offset }),
          };
          const response = await put('pairs', id, json);
          const timed = offset !== undefined && offset !== null && offset > 0;
          const wantsMute = offset === undefined ? isMuted === true : timed;
          if (isMuted !== undefined && offset !== undefined && isMuted !== timed) {
            expect(response.status).toBe(400);
            return;
          }
          expect(response.status).toBe(200);
          expect(response.body.is_muted).toBe(wantsMute);
          expect(response.body.muted_until).toBe(timed ? clock.now + offset : null);
          expect((await mutedIds('pairs', wantsMute)).includes(id)).toBe(true);
          expect((await mutedIds('pairs', !wantsMute)).includes(id)).toBe(false);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('expired mutes are in muted=false and not in muted=true, across pages with exact has_more, forwards and backwards', async () => {
    const user = 'pager';
    // 12 conversations: forever-muted, muted until various times, unmuted, in a mix.
    const plan = ['forever', 10, null, 20, 30, 'forever', null, 10, 40, null, 20, 'forever'] as const;
    const made: { id: string; until: (typeof plan)[number] }[] = [];
    for (const until of plan) {
      const id = await conversation(user);
      if (until === 'forever') await put(user, id, { is_muted: true });
      else if (until !== null) await put(user, id, { muted_until: clock.now + until });
      made.push({ id, until });
    }
    const newestFirst = made.map((m) => m.id).reverse();
    const start = clock.now;
    const mutedAt = (until: (typeof plan)[number], at: number) => until === 'forever' || (until !== null && at < start + until);
    const untilOf = new Map(made.map((m) => [m.id, m.until]));
    for (const [step, elapsed] of [0, 10, 15, 20, 30, 40].entries()) {
      clock.now = start + elapsed;
      // Each side first in turn: the first list after a mute ends reads it before any write-back.
      for (const muted of step % 2 === 0 ? [false, true] : [true, false]) {
        const want = newestFirst.filter((id) => mutedAt(untilOf.get(id)!, clock.now) === muted);
        // A page of one puts a page boundary between every two conversations; a page of five holds several.
        for (const limit of [5, 1]) {
          expect(await walk(user, `&muted=${muted}`, limit, 'forwards'), `muted=${muted} after ${elapsed}s, limit ${limit}`).toEqual(want);
          expect(
            await walk(user, `&muted=${muted}`, limit, 'backwards'),
            `muted=${muted} after ${elapsed}s, limit ${limit}, backwards`,
          ).toEqual(want);
        }
      }
    }
    clock.now = start + 40;
  });
});

/** Every page of a list, following cursors, checking has_more on each page; ids newest first. */
async function walk(userId: string, query: string, limit: number, direction: 'forwards' | 'backwards'): Promise<string[]> {
  const pages: string[][] = [];
  // Backwards starts below the oldest id there can be: a cursor need not name an existing object.
  let cursor: string | undefined = direction === 'forwards' ? undefined : `conv_${'0'.repeat(26)}`;
  for (let page = 0; page < 100; page += 1) {
    const cursorParam = cursor === undefined ? '' : direction === 'forwards' ? `&starting_after=${cursor}` : `&ending_before=${cursor}`;
    const response = await t().call(userId, 'GET', `/v1/conversations?limit=${limit}${query}${cursorParam}`);
    expect(response.status).toBe(200);
    const ids = response.body.data.map((c: { id: string }) => c.id) as string[];
    pages.push(ids);
    if (!response.body.has_more) break;
    expect(ids).toHaveLength(limit);
    cursor = direction === 'forwards' ? ids.at(-1) : ids[0];
  }
  return direction === 'forwards' ? pages.flat() : pages.reverse().flat();
}
