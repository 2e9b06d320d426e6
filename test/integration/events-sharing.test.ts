import { randomBytes } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { attachmentStore, dynamo, fanOut } from '../../shared/app.js';
import type { FeedEvent } from '../support/audit.js';
import { freshId, type Member, sharingApi, withoutLink } from '../support/sharing.js';

/**
 * Events that reach a user from another member (docs/api.md, "Events"): a
 * shared upload, its rename and its delete, the side a direct upload makes,
 * and the cleanup's removal of a deleted side's uploads, each one event in
 * the feed of every member who holds a side, with request_id null, written
 * by the fan-out (or the cleanup) in the same write as what it records.
 */
// Scanning off: this file counts each feed's events one by one, among which a scan result's attachment.updated
// would fall at its own time; scanning.test.ts holds the scan results' events.
const s = sharingApi({ env: { SCANNING: 'off' } });
const file = (filename: string) => ({ bytes: randomBytes(48), filename, type: 'text/plain' });
const anyId = expect.stringMatching(/^evt_/);

/** What an event is, without its id and time. */
const gist = ({ type, data, request_id }: FeedEvent) => ({ type, data, request_id });

describe('a direct thread', () => {
  it('an upload to a contact who holds no side is conversation.created (their new side, unread) then attachment.created (their view), from no request', async () => {
    const [a, b] = [{ id: freshId('a') }, { id: freshId('b') }];
    const sideA = (await s.openSide(a, { contact_id: b.id })).body;
    const uploaded = await s.upload(a, sideA.id, file('notes.txt'));

    const events = await s.feedOf(b, 2);
    const sideB = await s.sideActiveAt(b, { contact_id: a.id }, uploaded.created_at);
    const seen = (await s.attachment(b, uploaded.id)).body;
    expect(seen.conversation_id).toBe(sideB.id);
    expect(events).toEqual([
      { id: anyId, type: 'conversation.created', created_at: expect.any(Number), data: { object: sideB }, request_id: null },
      { id: anyId, type: 'attachment.created', created_at: expect.any(Number), data: { object: withoutLink(seen) }, request_id: null },
    ]);
    expect(sideB).toMatchObject({ contact_id: a.id, last_active_at: uploaded.created_at, last_opened_at: null });
    // The uploader's own feed has their events, with their request, and nothing of the fan-out.
    expect((await s.feed(a)).map((event) => [event.type, event.request_id === null])).toEqual([
      ['conversation.created', false],
      ['attachment.created', false],
      ['conversation.updated', false],
    ]);
  });

  it('an upload to a contact who holds a side is attachment.created and conversation.updated with the old last_active_at', async () => {
    const [a, b] = [{ id: freshId('a') }, { id: freshId('b') }];
    const sideA = (await s.openSide(a, { contact_id: b.id })).body;
    const opened = (await s.openSide(b, { contact_id: a.id })).body;
    const uploaded = await s.upload(a, sideA.id, file('plan.txt'));

    const events = await s.feedOf(b, 3);
    const sideB = await s.sideActiveAt(b, { contact_id: a.id }, uploaded.created_at);
    expect(sideB.id).toBe(opened.id);
    const seen = (await s.attachment(b, uploaded.id)).body;
    expect(events.map(gist)).toEqual([
      { type: 'conversation.created', data: { object: opened }, request_id: expect.any(String) },
      { type: 'attachment.created', data: { object: withoutLink(seen) }, request_id: null },
      { type: 'conversation.updated', data: { object: sideB, previous_attributes: { last_active_at: null } }, request_id: null },
    ]);
  });

  it("the uploader's rename and delete reach the contact as attachment.updated (the old name) and attachment.deleted", async () => {
    const [a, b] = [{ id: freshId('a') }, { id: freshId('b') }];
    const sideA = (await s.openSide(a, { contact_id: b.id })).body;
    const uploaded = await s.upload(a, sideA.id, file('draft.txt'));
    await s.feedOf(b, 2);
    const renamed = await s.call(a, 'PUT', `/v1/attachments/${uploaded.id}`, { json: { filename: 'final.txt' } });
    expect(renamed.status).toBe(200);
    const afterRename = await s.feedOf(b, 3);
    const seen = (await s.attachment(b, uploaded.id)).body;
    expect((await s.call(a, 'DELETE', `/v1/attachments/${uploaded.id}`)).status).toBe(200);

    const events = await s.feedOf(b, 4);
    expect(afterRename.at(-1)).toEqual(events[2]);
    expect(events.slice(2).map(gist)).toEqual([
      { type: 'attachment.updated', data: { object: withoutLink(seen), previous_attributes: { filename: 'draft.txt' } }, request_id: null },
      { type: 'attachment.deleted', data: { object: { id: uploaded.id, deleted: true } }, request_id: null },
    ]);
    expect(seen).toMatchObject({ filename: 'final.txt', uploaded_by: a.id });
  });
});

describe('a group thread', () => {
  it('an upload reaches every member who holds a side (attachment.created, conversation.updated), and no member without one', async () => {
    const g = freshId('g');
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((name): Member => ({ id: freshId(name), groups: [g] }));
    const sides = new Map<string, string>();
    for (const who of [a!, b!, c!]) sides.set(who.id, (await s.openSide(who, { group_id: g })).body.id);
    const uploaded = await s.upload(a!, sides.get(a!.id)!, file('minutes.txt'));

    for (const member of [b!, c!]) {
      const events = await s.feedOf(member, 3);
      const side = await s.sideActiveAt(member, { group_id: g }, uploaded.created_at);
      const seen = (await s.attachment(member, uploaded.id)).body;
      expect(seen.conversation_id).toBe(sides.get(member.id));
      expect(events.slice(1).map(gist), member.id).toEqual([
        { type: 'attachment.created', data: { object: withoutLink(seen) }, request_id: null },
        { type: 'conversation.updated', data: { object: side, previous_attributes: { last_active_at: null } }, request_id: null },
      ]);
    }
    // d sees the file (a member by their token) but holds no side: nothing in their feed, and no side made.
    expect((await s.attachment(d!, uploaded.id)).body.conversation_id).toBeNull();
    expect(await s.feed(d!)).toEqual([]);
    // The uploader's feed has only their own events, and their file's scan result.
    const fromElsewhere = (await s.feed(a!)).filter((event) => event.request_id === null);
    expect(
      fromElsewhere.every((event) => event.data.object.id === uploaded.id && 'scan_status' in (event.data.previous_attributes ?? {})),
    ).toBe(true);
  });
});

describe('the cleanup of a deleted side', () => {
  it("removes its uploads from every member's view: attachment.deleted in the uploader's feed after conversation.deleted, and in each member's", async () => {
    const g = freshId('g');
    const [a, b] = ['a', 'b'].map((name): Member => ({ id: freshId(name), groups: [g] }));
    const sideA = (await s.openSide(a!, { group_id: g })).body;
    await s.openSide(b!, { group_id: g });
    const uploads = [await s.upload(a!, sideA.id, file('one.txt')), await s.upload(a!, sideA.id, file('two.txt'))];
    const removals = (events: FeedEvent[]) => events.filter((event) => event.type === 'attachment.deleted');
    const created = (events: FeedEvent[]) => events.filter((event) => event.type === 'attachment.created');
    expect(created(await s.feedOf(b!, (events) => created(events).length === uploads.length))).toHaveLength(uploads.length);
    const deleted = await s.call(a!, 'DELETE', `/v1/conversations/${sideA.id}`);
    expect(deleted.status).toBe(200);

    const ids = uploads.map((upload) => upload.id).sort();
    const uploaderFeed = await s.feedOf(a!, (events) => removals(events).length === uploads.length);
    const afterDelete = uploaderFeed.slice(uploaderFeed.findIndex((event) => event.type === 'conversation.deleted'));
    expect(afterDelete[0]).toMatchObject({
      data: { object: { id: sideA.id, deleted: true } },
      request_id: deleted.headers.get('x-request-id'),
    });
    expect(
      afterDelete
        .slice(1)
        .map(gist)
        .sort((x, y) => String(x.data.object.id).localeCompare(String(y.data.object.id))),
    ).toEqual(ids.map((id) => ({ type: 'attachment.deleted', data: { object: { id, deleted: true } }, request_id: null })));
    const memberFeed = await s.feedOf(b!, (events) => removals(events).length === uploads.length);
    expect(removals(memberFeed).map((event) => [event.data.object.id, event.request_id])).toEqual(
      expect.arrayContaining(ids.map((id) => [id, null])),
    );
    expect(removals(memberFeed)).toHaveLength(uploads.length);
    for (const upload of uploads) expect((await s.attachment(b!, upload.id)).status).toBe(404);
  });
});

describe('a change delivered again (a batch retried, the local poller restarted)', () => {
  /** The ids of the changes `userId`'s feed recorded as delivered (shared/conversations/side-delivery.ts). */
  const deliveredTo = async (userId: string): Promise<string[]> => {
    const { composition, config } = s.t().api;
    const { Items = [] } = await composition.use(dynamo).send(
      new QueryCommand({
        TableName: config.eventsTable,
        KeyConditionExpression: 'pk = :user AND begins_with(sk, :delivered)',
        ExpressionAttributeValues: { ':user': userId, ':delivered': 'r#' },
        ConsistentRead: true,
      }),
    );
    return Items.map((item) => String(item.sk).slice('r#'.length));
  };

  it('records nothing twice, and does not make again the side its contact deleted since', async () => {
    const [a, b] = [{ id: freshId('a') }, { id: freshId('b') }];
    const sideA = (await s.openSide(a, { contact_id: b.id })).body;
    const uploaded = await s.upload(a, sideA.id, file('again.txt'));
    await s.feedOf(b, 2);
    const sideB = await s.sideActiveAt(b, { contact_id: a.id }, uploaded.created_at);
    const changes = await deliveredTo(b.id);
    expect(changes).toHaveLength(1);
    const record = (await s.t().api.composition.use(attachmentStore).get(uploaded.id))!;
    const again = () =>
      s
        .t()
        .api.composition.use(fanOut)
        .deliver([{ kind: 'created', id: changes[0]!, record }]);

    const before = await s.feed(b);
    await again();
    expect(await s.feed(b)).toEqual(before);
    expect(await s.conversation(b, sideB.id)).toEqual(sideB);

    expect((await s.call(b, 'DELETE', `/v1/conversations/${sideB.id}`)).status).toBe(200);
    await again();
    expect(await s.sides(b, { contact_id: a.id })).toEqual([]);
    expect((await s.feed(b)).map((event) => event.type)).toEqual([...before.map((event) => event.type), 'conversation.deleted']);
  });
});
