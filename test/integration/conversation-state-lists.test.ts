import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';
import { upload } from '../support/attachments.js';

// Lists filtered on unread and on time-evaluated mutes, alone and combined with the other
// filters, against a model of what each conversation was given; the clock is the test's.
const START = 1_800_000_000;
let now = START;
let t: TestApi;
const USER = 'state_lister';

interface Made {
  id: string;
  pinned: boolean;
  archived: boolean;
  /** 'forever', an end time, or no mute. */
  mute: 'forever' | number | null;
  active: number | null;
  opened: number | null;
}
const made: Made[] = [];

beforeAll(async () => {
  t = await startTestApi({ clock: () => now });
  for (let i = 0; i < 24; i++) {
    const created = await t.call(USER, 'POST', '/v1/conversations', { form: { contact_id: `c_${i}` } });
    const id = created.body.id as string;
    const conversation: Made = {
      id,
      pinned: i % 3 === 0,
      archived: i % 4 === 1,
      mute: i % 5 === 0 ? 'forever' : i % 5 === 1 ? START + 10 * (i % 4) + 5 : i % 5 === 2 ? START + 100 : null,
      active: null,
      opened: null,
    };
    if (i % 2 === 0) {
      expect((await upload(t, USER, { bytes: 'x' }, { conversation_id: id })).status).toBe(201);
      // The uploader's own upload leaves their side read.
      conversation.active = now;
      conversation.opened = now;
    }
    // Some marked unread, some opened at the upload's time, some left as they are.
    const opened = i % 3 === 1 ? null : i % 3 === 2 ? now : undefined;
    const changes = {
      is_pinned: conversation.pinned,
      ...(conversation.archived ? { archived_at: START } : {}),
      ...(conversation.mute === 'forever' ? { is_muted: true } : conversation.mute !== null ? { muted_until: conversation.mute } : {}),
      ...(opened === undefined ? {} : { last_opened_at: opened }),
    };
    expect((await t.call(USER, 'PUT', `/v1/conversations/${id}`, { json: changes })).status).toBe(200);
    if (opened !== undefined) conversation.opened = opened;
    made.push(conversation);
  }
});
afterAll(() => t?.close());

const isMuted = (c: Made, at: number) => c.mute === 'forever' || (typeof c.mute === 'number' && at < c.mute);
const isUnread = (c: Made) => c.active !== null && (c.opened === null || c.opened < c.active);

type Filter = { muted?: boolean; unread?: boolean; pinned?: boolean; archived?: boolean };
const matches = (c: Made, filter: Filter, at: number) =>
  (filter.muted === undefined || isMuted(c, at) === filter.muted) &&
  (filter.unread === undefined || isUnread(c) === filter.unread) &&
  (filter.pinned === undefined || c.pinned === filter.pinned) &&
  (filter.archived === undefined || c.archived === filter.archived);

async function walk(query: string, limit: number): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 50; pages++) {
    const response = await t.call(USER, 'GET', `/v1/conversations?limit=${limit}${query}${cursor ? `&starting_after=${cursor}` : ''}`);
    expect(response.status).toBe(200);
    const ids = response.body.data.map((c: { id: string }) => c.id) as string[];
    seen.push(...ids);
    if (!response.body.has_more) return seen;
    // No short pages while more matches exist.
    expect(ids).toHaveLength(limit);
    cursor = ids.at(-1);
  }
  throw new Error('list did not end');
}

describe('unread and muted filters, alone and combined, across pages', () => {
  it('every combination returns exactly the matching conversations, newest first, with exact has_more, as mutes end', async () => {
    const filter = fc.record(
      { muted: fc.boolean(), unread: fc.boolean(), pinned: fc.boolean(), archived: fc.boolean() },
      { requiredKeys: [] },
    );
    await fc.assert(
      // Time only moves forward (an ended mute may have been written back as no mute).
      fc.asyncProperty(filter, fc.integer({ min: 1, max: 7 }), fc.integer({ min: 0, max: 4 }), async (wanted, limit, step) => {
        now += step;
        const elapsed = now - START;
        const query = Object.entries(wanted)
          .map(([name, value]) => `&${name}=${value}`)
          .join('');
        const expected = made
          .filter((c) => matches(c, wanted, now))
          .map((c) => c.id)
          .reverse();
        expect(await walk(query, limit), `${query} at +${elapsed}s, limit ${limit}`).toEqual(expected);
      }),
      { numRuns: 80 },
    );
  });

  it('the population has every state the filters separate', () => {
    for (const at of [START, START + 50]) {
      expect(made.some((c) => isMuted(c, at))).toBe(true);
      expect(made.some((c) => !isMuted(c, at))).toBe(true);
    }
    expect(made.some((c) => typeof c.mute === 'number')).toBe(true);
    expect(made.some(isUnread)).toBe(true);
    expect(made.some((c) => c.active !== null && !isUnread(c))).toBe(true);
  });
});
