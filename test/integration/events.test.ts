import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { dynamo } from '../../shared/app.js';
import { EVENT_RETENTION_SECONDS, type StoredEvent } from '../../shared/events/model.js';
import { EventStore } from '../../shared/events/store.js';
import type { TestApi, TestResponse } from '../support/api.js';
import { upload, uploadForm } from '../support/attachments.js';
import { type FeedEvent, feedOf as feedOfUser } from '../support/audit.js';
import { clockedApi } from '../support/conversations.js';
import { sessionClient } from '../support/upload-sessions.js';

/**
 * The events feed (docs/api.md, "Events"): one event per change the user
 * can see, written with the change, read newest first over HTTP.
 */
const START = 1_800_000_000;
// Scanning off: this file counts a feed's events and reads, which a scan result's attachment.updated (scanning.test.ts's) would add to.
const { clock, t } = clockedApi(START, { env: { SCANNING: 'off' } });

/** The user's whole feed, newest first; `filter` e.g. `type=attachment.*`. */
const feedOf = (userId: string, filter = '') => feedOfUser(t(), userId, filter);

const requestIdOf = (response: TestResponse) => response.headers.get('x-request-id');

let users = 0;
const newUser = () => `events-user-${users++}`;

async function created(userId: string, form: Record<string, string>, headers: Record<string, string> = {}) {
  const response = await t().call(userId, 'POST', '/v1/conversations', {
    form,
    headers,
    ...(form.group_id ? { groups: [form.group_id] } : {}),
  });
  expect(response.status).toBe(201);
  return response;
}

describe('conversation events', () => {
  it('a create is one conversation.created with the conversation as the answer showed it and the request id; finding the existing one is none', async () => {
    const user = newUser();
    const response = await created(user, { contact_id: 'alice' });
    expect((await t().call(user, 'POST', '/v1/conversations', { form: { contact_id: 'alice' } })).status).toBe(200);
    const feed = await feedOf(user);
    expect(feed).toEqual([
      {
        id: expect.stringMatching(/^evt_[0-9A-HJKMNP-TV-Z]{24}$/),
        type: 'conversation.created',
        created_at: START,
        data: { object: response.body },
        request_id: requestIdOf(response),
      },
    ]);
    expect(requestIdOf(response)).toEqual(expect.any(String));
  });

  it('an update is one conversation.updated with the new conversation and the old values of the changed fields only', async () => {
    const user = newUser();
    const { body: conversation } = await created(user, { contact_id: 'bob' });
    const response = await t().call(user, 'PUT', `/v1/conversations/${conversation.id}`, {
      json: { is_pinned: true, pinned_message_id: 'm1', archived_at: null },
    });
    expect(response.status).toBe(200);
    const [updated] = await feedOf(user);
    expect(updated).toMatchObject({
      type: 'conversation.updated',
      data: { object: response.body, previous_attributes: { is_pinned: false, pinned_message_id: null } },
      request_id: requestIdOf(response),
    });
    expect(Object.keys(updated!.data.previous_attributes!).sort()).toEqual(['is_pinned', 'pinned_message_id']);
  });

  it('an update that changes nothing writes no event: the same values, or an open older than the stored one', async () => {
    const user = newUser();
    const { body: conversation } = await created(user, { contact_id: 'carol' });
    await t().call(user, 'PUT', `/v1/conversations/${conversation.id}`, { json: { is_pinned: true, last_opened_at: START } });
    const before = await feedOf(user);
    for (const json of [{ is_pinned: true }, { last_opened_at: START - 10 }, { archived_at: null, is_muted: false }]) {
      expect((await t().call(user, 'PUT', `/v1/conversations/${conversation.id}`, { json })).status).toBe(200);
    }
    expect(await feedOf(user)).toEqual(before);
    expect(before.map((event) => event.type)).toEqual(['conversation.updated', 'conversation.created']);
    expect(before[0]!.data.previous_attributes).toEqual({ is_pinned: false, last_opened_at: null });
  });

  it('a delete is one conversation.deleted naming the id; a second DELETE (404) is none', async () => {
    const user = newUser();
    const { body: conversation } = await created(user, { contact_id: 'dave' });
    const response = await t().call(user, 'DELETE', `/v1/conversations/${conversation.id}`);
    expect(response.status).toBe(200);
    expect((await t().call(user, 'DELETE', `/v1/conversations/${conversation.id}`)).status).toBe(404);
    const [deleted, ...rest] = await feedOf(user);
    expect(deleted).toMatchObject({
      type: 'conversation.deleted',
      data: { object: { id: conversation.id, deleted: true } },
      request_id: requestIdOf(response),
    });
    expect(deleted!.data.previous_attributes).toBeUndefined();
    expect(rest.map((event) => event.type)).toEqual(['conversation.created']);
  });

  it('a refused request writes no event: 400 on create and on update, 403 for a group the token lacks, 404 for another user', async () => {
    const user = newUser();
    const { body: conversation } = await created(user, { contact_id: 'erin' });
    const before = await feedOf(user);
    expect((await t().call(user, 'POST', '/v1/conversations', { form: { contact_id: 'a b' } })).status).toBe(400);
    expect((await t().call(user, 'PUT', `/v1/conversations/${conversation.id}`, { json: { is_pinned: 'yes' } })).status).toBe(400);
    expect((await t().call(user, 'PUT', `/v1/conversations/${conversation.id}`, { json: { is_pinned: true, owner: 'x' } })).status).toBe(
      400,
    );
    expect((await t().call(user, 'POST', '/v1/conversations', { form: { group_id: 'g-not-mine' } })).status).toBe(403);
    expect((await t().call('someone-else', 'PUT', `/v1/conversations/${conversation.id}`, { json: { is_pinned: true } })).status).toBe(404);
    expect(await feedOf(user)).toEqual(before);
    expect(await feedOf('someone-else')).toEqual([]);
  });

  it('a replayed Idempotency-Key writes nothing: one event for the key, whatever the retries', async () => {
    const user = newUser();
    const first = await created(user, { contact_id: 'frank' }, { 'idempotency-key': 'k-1' });
    const again = await created(user, { contact_id: 'frank' }, { 'idempotency-key': 'k-1' });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const feed = await feedOf(user);
    expect(feed).toHaveLength(1);
    expect(feed[0]).toMatchObject({ type: 'conversation.created', data: { object: first.body }, request_id: requestIdOf(first) });
  });
});

describe('attachment events, for the uploader', () => {
  it('an upload, a rename and a delete are attachment.created, attachment.updated and attachment.deleted; a rename to the same name is none', async () => {
    const user = newUser();
    const { body: conversation } = await created(user, { contact_id: 'gina' });
    const uploaded = await upload(
      t(),
      user,
      { bytes: 'hello', filename: 'a.txt', type: 'text/plain' },
      { conversation_id: conversation.id },
    );
    expect(uploaded.status).toBe(201);
    const renamed = await t().call(user, 'PUT', `/v1/attachments/${uploaded.body.id}`, { json: { filename: 'b.txt' } });
    expect(renamed.status).toBe(200);
    expect((await t().call(user, 'PUT', `/v1/attachments/${uploaded.body.id}`, { json: { filename: 'b.txt' } })).status).toBe(200);
    const removed = await t().call(user, 'DELETE', `/v1/attachments/${uploaded.body.id}`);
    expect(removed.status).toBe(200);

    const { file_url: _url, file_url_expires_at: _expires, ...shown } = uploaded.body;
    const { file_url: _url2, file_url_expires_at: _expires2, ...shownRenamed } = renamed.body;
    expect((await feedOf(user, 'type=attachment.*')).reverse()).toEqual([
      expect.objectContaining({ type: 'attachment.created', data: { object: shown }, request_id: requestIdOf(uploaded) }),
      expect.objectContaining({
        type: 'attachment.updated',
        data: { object: shownRenamed, previous_attributes: { filename: 'a.txt' } },
        request_id: requestIdOf(renamed),
      }),
      expect.objectContaining({
        type: 'attachment.deleted',
        data: { object: { id: uploaded.body.id, deleted: true } },
        request_id: requestIdOf(removed),
      }),
    ]);
  });

  it('an upload into a conversation is also the conversation.updated of the uploader’s side: active and read at the upload', async () => {
    const user = newUser();
    const { body: conversation } = await created(user, { contact_id: 'ivan' });
    clock.now = START + 60;
    const uploaded = await upload(t(), user, { bytes: 'hi', filename: 'c.txt' }, { conversation_id: conversation.id });
    clock.now = START;
    expect(uploaded.status).toBe(201);
    const shown = await t().call(user, 'GET', `/v1/conversations/${conversation.id}`);
    expect(shown.body).toMatchObject({ last_active_at: START + 60, last_opened_at: START + 60 });
    const [update, attachment] = await feedOf(user);
    expect(attachment).toMatchObject({ type: 'attachment.created', request_id: requestIdOf(uploaded) });
    expect(update).toMatchObject({
      type: 'conversation.updated',
      data: { object: shown.body, previous_attributes: { last_active_at: null, last_opened_at: null } },
      request_id: requestIdOf(uploaded),
    });
    // An older upload moves nothing that the conversation shows: no conversation.updated.
    const older = await upload(t(), user, { bytes: 'ho', filename: 'd.txt' }, { conversation_id: conversation.id });
    expect(older.status).toBe(201);
    expect((await feedOf(user)).map((event) => event.type).slice(0, 2)).toEqual(['attachment.created', 'conversation.updated']);
  });

  it('a refused upload, rename or delete writes no event; a replayed upload writes none', async () => {
    const uploader = newUser();
    const stranger = newUser();
    const first = await t().call(uploader, 'POST', '/v1/attachments', {
      body: uploadForm({ bytes: 'x', filename: 'x.txt' }),
      headers: { 'idempotency-key': 'up-1' },
    });
    expect(first.status).toBe(201);
    const replay = await t().call(uploader, 'POST', '/v1/attachments', {
      body: uploadForm({ bytes: 'x', filename: 'x.txt' }),
      headers: { 'idempotency-key': 'up-1' },
    });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(
      (await upload(t(), uploader, { bytes: 'y', filename: 'y.txt' }, { conversation_id: 'conv_01HZY3K8Q4W6N2B7C9D5E1F0GA' })).status,
    ).toBe(400);
    expect((await t().call(uploader, 'PUT', `/v1/attachments/${first.body.id}`, { json: { filename: '' } })).status).toBe(400);
    expect((await t().call(stranger, 'PUT', `/v1/attachments/${first.body.id}`, { json: { filename: 'mine.txt' } })).status).toBe(404);
    expect((await t().call(stranger, 'DELETE', `/v1/attachments/${first.body.id}`)).status).toBe(404);
    expect((await feedOf(uploader)).map((event) => event.type)).toEqual(['attachment.created']);
    expect(await feedOf(stranger)).toEqual([]);
  });

  it('a completed upload session is one attachment.created; completing it again is none', async () => {
    const user = newUser();
    const sessions = sessionClient(t());
    const bytes = Buffer.from('a file in one part');
    const started = await sessions.start(user, { filename: 'big.bin', file_size: bytes.length, file_type: 'application/octet-stream' });
    expect(started.status).toBe(201);
    const parts = await sessions.uploadAll(user, started.body, bytes);
    const completed = await sessions.complete(user, started.body.id, parts);
    expect(completed.status).toBe(201);
    const again = await sessions.complete(user, started.body.id, parts);
    expect(again.body.id).toBe(completed.body.id);
    const { file_url: _url, file_url_expires_at: _expires, ...shown } = completed.body;
    expect(await feedOf(user)).toEqual([
      expect.objectContaining({ type: 'attachment.created', data: { object: shown }, request_id: requestIdOf(completed) }),
    ]);
  });

  it('a session completed into a conversation whose activity is later only checks it: no conversation.updated, its activity stays', async () => {
    const user = newUser();
    const sessions = sessionClient(t());
    const { body: conversation } = await created(user, { contact_id: 'judy' });
    clock.now = START + 60;
    const later = await upload(t(), user, { bytes: 'hi', filename: 'c.txt' }, { conversation_id: conversation.id });
    clock.now = START;
    expect(later.status).toBe(201);
    const bytes = Buffer.from('an older file in one part');
    const started = await sessions.start(user, { filename: 'older.bin', file_size: bytes.length, conversation_id: conversation.id });
    expect(started.status).toBe(201);
    // Its transaction holds a ConditionCheck of the conversation, not an Update (CompleteUploadSession's 'check').
    const completed = await sessions.complete(user, started.body.id, await sessions.uploadAll(user, started.body, bytes));
    expect(completed.status).toBe(201);
    expect(completed.body.conversation_id).toBe(conversation.id);
    expect((await t().call(user, 'GET', `/v1/conversations/${conversation.id}`)).body).toMatchObject({ last_active_at: START + 60 });
    expect((await feedOf(user)).map((event) => event.type).slice(0, 3)).toEqual([
      'attachment.created',
      'conversation.updated',
      'attachment.created',
    ]);
  });
});

describe('GET /v1/events/:id', () => {
  it('answers the user their own event as the list shows it, and 404 resource_missing for another user or a malformed id', async () => {
    const user = newUser();
    await created(user, { contact_id: 'hal' });
    const [event] = await feedOf(user);
    const own = await t().call(user, 'GET', `/v1/events/${event!.id}`);
    expect(own.status).toBe(200);
    expect(own.body).toEqual(event);

    // Another user has a feed of their own, with an event at the same sequence number: the id still names nothing of theirs.
    const other = newUser();
    await created(other, { contact_id: 'hal' });
    const theirs = await t().call(other, 'GET', `/v1/events/${event!.id}`);
    expect(theirs.status).toBe(404);
    expect(theirs.body.error).toMatchObject({ code: 'resource_missing' });
    for (const id of ['evt_nope', `${event!.id}0`, event!.id.toLowerCase(), 'evt_000000000000000000000000']) {
      expect((await t().call(user, 'GET', `/v1/events/${id}`)).status).toBe(404);
    }
  });
});

describe('GET /v1/events', () => {
  /** A user with `count` conversations created one after another: 2 × count events (created, then pinned). */
  async function busyUser(count: number): Promise<string> {
    const user = newUser();
    for (let index = 0; index < count; index += 1) {
      const { body } = await created(user, { contact_id: `c${index}` });
      expect((await t().call(user, 'PUT', `/v1/conversations/${body.id}`, { json: { is_pinned: true } })).status).toBe(200);
    }
    return user;
  }

  it('pages newest first with starting_after and back with ending_before, has_more exact', async () => {
    const user = await busyUser(4);
    const all = await feedOf(user);
    expect(all).toHaveLength(8);
    expect(all.map((event) => event.id)).toEqual(
      all
        .map((event) => event.id)
        .sort()
        .reverse(),
    );
    const first = await t().call(user, 'GET', '/v1/events?limit=3');
    expect(first.body).toEqual({ has_more: true, data: all.slice(0, 3) });
    const second = await t().call(user, 'GET', `/v1/events?limit=3&starting_after=${all[2]!.id}`);
    expect(second.body).toEqual({ has_more: true, data: all.slice(3, 6) });
    const last = await t().call(user, 'GET', `/v1/events?limit=3&starting_after=${all[5]!.id}`);
    expect(last.body).toEqual({ has_more: false, data: all.slice(6) });
    const back = await t().call(user, 'GET', `/v1/events?limit=3&ending_before=${all[6]!.id}`);
    expect(back.body).toEqual({ has_more: true, data: all.slice(3, 6) });
    expect((await t().call(user, 'GET', `/v1/events?ending_before=${all[0]!.id}`)).body).toEqual({ has_more: false, data: [] });
  });

  it('filters by one type or by every type of a resource; an unknown type is 400 parameter_invalid', async () => {
    const user = await busyUser(3);
    await upload(t(), user, { bytes: 'z', filename: 'z.txt' });
    const all = await feedOf(user);
    expect(await feedOf(user, 'type=conversation.updated')).toEqual(all.filter((event) => event.type === 'conversation.updated'));
    expect(await feedOf(user, 'type=conversation.*')).toEqual(all.filter((event) => event.type.startsWith('conversation.')));
    expect((await feedOf(user, 'type=attachment.*')).map((event) => event.type)).toEqual(['attachment.created']);
    const filteredPage = await t().call(user, 'GET', '/v1/events?limit=2&type=conversation.created');
    expect(filteredPage.body).toEqual({ has_more: true, data: all.filter((event) => event.type === 'conversation.created').slice(0, 2) });
    for (const type of ['conversation', 'message.created', '*', 'attachment.%2A%2A', 'Attachment.created']) {
      const response = await t().call(user, 'GET', `/v1/events?type=${type}`);
      expect(response.status, type).toBe(400);
      expect(response.body.error).toMatchObject({ code: 'parameter_invalid', param: 'type' });
    }
  });

  it('reads at most limit + 1 items a page with a type filter too, however rare the type among the events, and pages it both ways', async () => {
    const user = await busyUser(6);
    const first = await upload(t(), user, { bytes: 'x', filename: 'x.txt' });
    const { body: conversation } = await created(user, { contact_id: 'rare' });
    for (const is_pinned of [true, false, true, false])
      expect((await t().call(user, 'PUT', `/v1/conversations/${conversation.id}`, { json: { is_pinned } })).status).toBe(200);
    const second = await upload(t(), user, { bytes: 'y', filename: 'y.txt' });
    const store = new EventStore(t().api.composition.use(dynamo), t().api.config.eventsTable, () => clock.now);
    const ids = (page: { data: StoredEvent[] }) => page.data.map(({ event }) => (event.data.object as { id: string }).id);

    const newest = await store.list(user, { kind: 'exact', type: 'attachment.created' }, { limit: 1 });
    expect(ids(newest.page)).toEqual([second.body.id]);
    expect(newest.page.has_more).toBe(true);
    expect(newest.cost).toEqual({ queries: 1, itemsRead: 2 });
    const resource = await store.list(user, { kind: 'resource', resource: 'attachment' }, { limit: 10 });
    expect(ids(resource.page)).toEqual([second.body.id, first.body.id]);
    expect(resource.cost).toEqual({ queries: 1, itemsRead: 2 });
    expect((await store.list(user, { kind: 'exact', type: 'attachment.deleted' }, { limit: 10 })).cost).toEqual({
      queries: 1,
      itemsRead: 0,
    });

    const [newer, older] = resource.page.data.map(({ event }) => event);
    const after = await t().call(user, 'GET', `/v1/events?type=attachment.created&limit=1&starting_after=${newer!.id}`);
    expect(after.body).toEqual({ has_more: false, data: [older] });
    const before = await t().call(user, 'GET', `/v1/events?type=attachment.*&limit=1&ending_before=${older!.id}`);
    expect(before.body).toEqual({ has_more: false, data: [newer] });
    // A cursor need not be of the filtered type: the page is the filtered events on its side of it.
    const pinned = (await feedOf(user, 'type=conversation.updated'))[0]!;
    expect((await t().call(user, 'GET', `/v1/events?type=attachment.created&starting_after=${pinned.id}`)).body.data).toEqual([older]);
    expect((await t().call(user, 'GET', `/v1/events?type=attachment.created&ending_before=${pinned.id}`)).body.data).toEqual([newer]);
  });

  it('refuses bad paging: both cursors, a cursor that is no event id, a limit out of range, an unknown parameter', async () => {
    const user = newUser();
    const id = 'evt_000000015B7M2Q8R4T6V9X1Y';
    for (const query of [
      `starting_after=${id}&ending_before=${id}`,
      'starting_after=conv_01HZY3K8Q4W6N2B7C9D5E1F0GA',
      'limit=0',
      'limit=101',
      'since=1',
    ]) {
      expect((await t().call(user, 'GET', `/v1/events?${query}`)).status, query).toBe(400);
    }
  });

  it('reads at most limit + 1 items a page, and stops at the end of the 30-day window even before TTL removes what lies past it', async () => {
    const user = await busyUser(6);
    const store = new EventStore(t().api.composition.use(dynamo), t().api.config.eventsTable, () => clock.now);
    const { page, cost } = await store.list(user, undefined, { limit: 3 });
    expect(page.data).toHaveLength(3);
    expect(cost).toEqual({ queries: 1, itemsRead: 4 });

    // The next events come 20 days later; 11 days after that the first ones are past the window, still stored.
    clock.now = START + 20 * 86_400;
    const { body: later } = await created(user, { contact_id: 'later' });
    clock.now = START + EVENT_RETENTION_SECONDS + 86_400;
    const listed = await t().call(user, 'GET', '/v1/events');
    expect(listed.body).toEqual({
      has_more: false,
      data: [expect.objectContaining({ type: 'conversation.created', data: { object: later } })],
    });
    // Past the window's edge nothing more is read: one Query of limit + 1 items.
    const past = await store.list(user, undefined, { limit: 10 });
    expect(past.cost).toEqual({ queries: 1, itemsRead: 11 });
    const stored = (
      await new EventStore(t().api.composition.use(dynamo), t().api.config.eventsTable, () => START).list(user, undefined, { limit: 20 })
    ).page.data;
    expect(stored).toHaveLength(13);
    const expired = stored.at(-1)!.event;
    expect((await t().call(user, 'GET', `/v1/events/${expired.id}`)).status).toBe(404);
    // A client that last synced before the window gets what the window holds.
    expect((await t().call(user, 'GET', `/v1/events?ending_before=${expired.id}`)).body.data).toEqual(listed.body.data);
    clock.now = START;
  });
});

describe('events past the 30-day window that TTL has not removed yet', () => {
  // DynamoDB deletes expired items within days, and the local TTL stand-in runs on no events table: stored, they
  // are read by the type and resource indexes' Queries too, which must leave them out as the feed's own does.
  it('are left out of the feed filtered by one type (by_type) and by a resource (by_resource), and are 404 by id', async () => {
    const user = newUser();
    await created(user, { contact_id: 'old' });
    clock.now = START + 20 * 86_400;
    const { body: recent } = await created(user, { contact_id: 'recent' });
    clock.now = START + EVENT_RETENTION_SECONDS + 86_400;
    try {
      const stored = await new EventStore(t().api.composition.use(dynamo), t().api.config.eventsTable, () => START).list(user, undefined, {
        limit: 10,
      });
      expect(stored.page.data).toHaveLength(2);
      const expired = stored.page.data.at(-1)!.event;
      for (const filter of ['type=conversation.created', 'type=conversation.*']) {
        const listed = await t().call(user, 'GET', `/v1/events?${filter}`);
        expect(listed.status, filter).toBe(200);
        expect(
          listed.body.data.map((event: FeedEvent) => event.data.object.id),
          filter,
        ).toEqual([recent.id]);
      }
      expect((await t().call(user, 'GET', `/v1/events/${expired.id}`)).status).toBe(404);
    } finally {
      clock.now = START;
    }
  });
});

describe('a feed that only grows at its head', () => {
  it('several writers changing one user’s conversations while a reader syncs with ending_before: the reader sees every event, one per acknowledged change', async () => {
    const user = newUser();
    const conversations: string[] = [];
    for (let index = 0; index < 4; index += 1) conversations.push((await created(user, { contact_id: `sync-${index}` })).body.id);
    const acknowledged: string[] = [];
    let writing = true;

    const writer = async (conversationId: string, writes: number) => {
      for (let index = 0; index < writes; index += 1) {
        // Each write pins a message of its own, so each is a change.
        const response = await t().call(user, 'PUT', `/v1/conversations/${conversationId}`, {
          json: { pinned_message_id: `m-${writer.name}-${randomUUID()}-${index}` },
        });
        if (response.status === 200) acknowledged.push(requestIdOf(response)!);
        // Refused, and so not in the feed: the feed's head contended past the budget (429), or a backend slowed by a loaded machine (503).
        else if (response.status === 429) expect(response.body.error.code).toBe('write_contention');
        else expect(response.status).toBe(503);
      }
    };
    const seen: FeedEvent[] = [];
    const sync = async (api: TestApi) => {
      let newest = (await api.call(user, 'GET', '/v1/events?limit=1')).body.data[0].id as string;
      const initial = newest;
      const pull = async () => {
        for (;;) {
          const page = await api.call(user, 'GET', `/v1/events?limit=5&ending_before=${newest}`);
          expect(page.status).toBe(200);
          if (page.body.data.length === 0) return;
          seen.push(...[...page.body.data].reverse());
          newest = page.body.data[0].id;
          if (!page.body.has_more) return;
        }
      };
      while (writing) await pull();
      await pull();
      return initial;
    };

    const reader = sync(t());
    await Promise.all(conversations.flatMap((id) => [writer(id, 8), writer(id, 8)]));
    writing = false;
    const initial = await reader;

    const feed = (await feedOf(user)).reverse();
    const after = feed.slice(feed.findIndex((event) => event.id === initial) + 1);
    expect(seen.map((event) => event.id)).toEqual(after.map((event) => event.id));
    expect(after.map((event) => event.request_id).sort()).toEqual([...acknowledged].sort());
    expect(acknowledged.length).toBeGreaterThan(0);
  });
});
