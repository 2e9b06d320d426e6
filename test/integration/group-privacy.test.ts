import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { uploadForm } from '../support/attachments.js';
import type { FeedEvent } from '../support/audit.js';
import { type Attachment, expectNotAMember, expectNotFound, freshId, type Member, sharingApi } from '../support/sharing.js';

/**
 * Who reads a group's events (docs/api.md): what another member's change of
 * a group's thread brings a user's feed is shown whole only while the
 * reader's token lists the group. A former member (a token without it) finds
 * each such event where it was, with its id, type and time, and
 * `data.object` `{"redacted": true}`: in the feed, the type-filtered feed and
 * GET /v1/events/{id}, with every cursor still working. Rejoining (the group
 * in the token again) shows them whole, the period out included; a stale
 * token that still lists the group is a member until it expires.
 */
const s = sharingApi();
const REDACTED = { object: { redacted: true } };

const file = (filename: string) => ({ bytes: randomBytes(40), filename, type: 'text/plain' });

/** Every answer a reader gets about their feed, as text: the feed, each filter of it, and each event by id. */
async function everythingReadable(reader: Member): Promise<string[]> {
  const texts: string[] = [];
  for (const filter of [
    '',
    'type=attachment.*',
    'type=attachment.created',
    'type=attachment.updated',
    'type=attachment.deleted',
    'type=conversation.*',
    'type=conversation.updated',
  ]) {
    const response = await s.call(reader, 'GET', `/v1/events?limit=100${filter ? `&${filter}` : ''}`);
    expect(response.status, response.text).toBe(200);
    expect(response.body.has_more).toBe(false);
    texts.push(response.text);
    for (const event of response.body.data as FeedEvent[]) {
      const one = await s.call(reader, 'GET', `/v1/events/${event.id}`);
      expect(one.status, one.text).toBe(200);
      expect(one.body).toEqual(event);
      texts.push(one.text);
    }
  }
  return texts;
}

/** The feed paged one event at a time, older with starting_after and newer with ending_before: the same events as one page. */
async function pagedOneByOne(reader: Member, filter = ''): Promise<{ older: FeedEvent[]; newer: FeedEvent[] }> {
  const page = async (cursor: string) =>
    (await s.call(reader, 'GET', `/v1/events?limit=1${filter ? `&${filter}` : ''}${cursor}`)).body as {
      has_more: boolean;
      data: FeedEvent[];
    };
  const older: FeedEvent[] = [];
  for (let next = await page(''); ; next = await page(`&starting_after=${older.at(-1)!.id}`)) {
    older.push(...next.data);
    if (!next.has_more) break;
  }
  const newer: FeedEvent[] = [];
  for (
    let next = await page(`&ending_before=${older.at(-1)!.id}`);
    next.data.length > 0;
    next = await page(`&ending_before=${newer.at(-1)!.id}`)
  ) {
    newer.push(...next.data);
    if (!next.has_more) break;
  }
  return { older, newer };
}

interface Scene {
  g: string;
  /** The member who keeps uploading. */
  a: Member;
  /** b as long as their token lists g, and b after it stopped listing it. */
  b: Member;
  bOut: Member;
  sideB: string;
  /** A direct contact of b's: nothing of theirs is the group's. */
  d: Member;
  /** Everything of g's attachments that a former member must not learn. */
  secrets: string[];
  /** g's attachments uploaded by a, and the direct one by d. */
  uploads: Attachment[];
  direct: Attachment;
  /** b's whole feed as a member reads it, oldest first. */
  memberFeed: FeedEvent[];
}

/**
 * a and b are members of g with a side each; a uploads before b leaves, and
 * after it uploads (with a message id), renames and deletes; d uploads into
 * b's direct thread. Returns once b's feed holds all of it.
 */
async function leaveScene(): Promise<Scene> {
  // Each file's scan result reaches b's feed before the scene goes on, so the feed's events are the same on every run.
  const scannedInFeedOfB = (id: string) => s.feedOf(b, (events) => events.some((event) => isScanResult(event, id)));
  const g = freshId('g');
  const a: Member = { id: freshId('a'), groups: [g] };
  const b: Member = { id: freshId('b'), groups: [g] };
  const bOut: Member = { id: b.id, groups: [] };
  const d: Member = { id: freshId('d') };
  const sideA = (await s.openSide(a, { group_id: g })).body.id;
  const sideB = (await s.openSide(b, { group_id: g })).body.id;
  const sideD = (await s.openSide(d, { contact_id: b.id })).body.id;

  const before = await s.upload(a, sideA, file(`before-${randomBytes(4).toString('hex')}.txt`));
  await scannedInFeedOfB(before.id);

  // b leaves g: from now on b's tokens do not list it. a carries on.
  const secretName = `secret-plan-${randomBytes(4).toString('hex')}.txt`;
  const messageId = `msg-${randomBytes(4).toString('hex')}`;
  const planned = await s.call(a, 'POST', '/v1/attachments', {
    body: uploadForm(file(secretName), { conversation_id: sideA, message_id: messageId }),
    groups: a.groups,
  });
  expect(planned.status, planned.text).toBe(201);
  const plan = planned.body as Attachment;
  const finalName = `secret-plan-final-${randomBytes(4).toString('hex')}.txt`;
  expect((await s.call(a, 'PUT', `/v1/attachments/${plan.id}`, { json: { filename: finalName } })).status).toBe(200);
  await scannedInFeedOfB(plan.id);
  const dropped = await s.upload(a, sideA, file(`dropped-${randomBytes(4).toString('hex')}.txt`));
  await scannedInFeedOfB(dropped.id);
  expect((await s.call(a, 'DELETE', `/v1/attachments/${dropped.id}`)).status).toBe(200);
  const direct = await s.upload(d, sideD, file('from-d.txt'));
  await scannedInFeedOfB(direct.id);

  // A member's view of b's feed (the same items), once every change has reached it.
  const memberFeed = await s.feedOf(
    b,
    (events) =>
      events.some((event) => event.type === 'attachment.deleted' && event.data.object.id === dropped.id) &&
      events.some((event) => event.type === 'attachment.created' && event.data.object.id === direct.id) &&
      events.some((event) => event.type === 'attachment.updated' && event.data.object.id === plan.id),
  );
  const uploads = [before, plan, dropped];
  const secrets = [a.id, messageId, secretName, finalName, before.filename, dropped.filename, ...uploads.map((upload) => upload.id)];
  return { g, a, b, bOut, sideB, d, secrets, uploads, direct, memberFeed };
}

/** Whether the event is the scan result of attachment `id` (attachment.updated of its scan_status). */
const isScanResult = (event: FeedEvent, id: string) =>
  event.type === 'attachment.updated' && event.data.object.id === id && event.data.previous_attributes?.scan_status !== undefined;

/** Whether the member's view of an event is what another member's change of g's thread brought: the fan-out's, request_id null, about g's files or b's side of g. */
const isGroupDelivery = (scene: Scene) => (event: FeedEvent) =>
  event.request_id === null && (scene.uploads.some((upload) => upload.id === event.data.object.id) || event.data.object.id === scene.sideB);

describe('a former member (a token without the group)', () => {
  it("reads every event of the group's thread redacted in place, in the feed, each filter and by id, and learns no name, id, uploader or message of its files", async () => {
    const scene = await leaveScene();
    const { bOut, memberFeed } = scene;
    const formerFeed = await s.feed(bOut);

    // The same events at the same places: the feed did not shrink or reorder, so cursors kept by the client still hold.
    expect(formerFeed.map(({ id, type, created_at }) => ({ id, type, created_at }))).toEqual(
      memberFeed.map(({ id, type, created_at }) => ({ id, type, created_at })),
    );
    const ofGroup = isGroupDelivery(scene);
    // Three uploads, their scan results, a rename, a delete; and b's side moved by the uploads (once per second they fell in).
    const delivered = memberFeed.filter(ofGroup).map((event) => event.type);
    expect(delivered.filter((type) => type.startsWith('attachment.')).sort()).toEqual([
      'attachment.created',
      'attachment.created',
      'attachment.created',
      'attachment.deleted',
      'attachment.updated',
      'attachment.updated',
      'attachment.updated',
      'attachment.updated',
    ]);
    expect(delivered.filter((type) => type === 'conversation.updated').length).toBeGreaterThanOrEqual(1);
    for (const [index, event] of formerFeed.entries()) {
      const asMember = memberFeed[index]!;
      if (ofGroup(asMember))
        expect(event, asMember.type).toEqual({
          id: asMember.id,
          type: asMember.type,
          created_at: asMember.created_at,
          data: REDACTED,
          request_id: null,
        });
      // b's own events (their side's creation) and the direct thread's stay whole.
      else expect(event).toEqual(asMember);
    }
    expect(formerFeed.filter((event) => event.data.object.id === scene.direct.id).map((event) => event.type)).toEqual([
      'attachment.created',
      'attachment.updated',
    ]);

    const readable = (await everythingReadable(bOut)).join('\n');
    for (const secret of scene.secrets) expect(readable, secret).not.toContain(secret);

    // Nor does any other endpoint name them: the files are 404, the thread's list 403.
    for (const upload of scene.uploads) expectNotFound(await s.attachment(bOut, upload.id));
    expectNotAMember(await s.call(bOut, 'GET', `/v1/attachments?conversation_id=${scene.sideB}`), 'conversation_id');
    const own = await s.list(bOut);
    expect(own.data).toEqual([]);
    const conversations = await s.call(bOut, 'GET', '/v1/conversations?limit=100');
    for (const secret of scene.secrets) expect(conversations.text, secret).not.toContain(secret);
    // What b's own side still shows (documented): last_active_at, the time of g's latest upload, and nothing of it.
    const side = await s.conversation(bOut, scene.sideB);
    expect(side.last_active_at).toBe(scene.uploads[2]!.created_at);
  });

  it('pages a feed holding redacted events by every cursor and filter, each page as the whole feed has it', async () => {
    const scene = await leaveScene();
    for (const filter of ['', 'type=attachment.*', 'type=conversation.updated']) {
      const whole = (await s.call(scene.bOut, 'GET', `/v1/events?limit=100${filter ? `&${filter}` : ''}`)).body.data as FeedEvent[];
      const { older, newer } = await pagedOneByOne(scene.bOut, filter);
      expect(older, filter).toEqual(whole);
      expect(newer, filter).toEqual(whole.slice(0, -1).reverse());
      expect(
        whole.some((event) => event.data.object.redacted === true),
        filter,
      ).toBe(true);
    }
  });

  it("reads their own uploads into the group's thread whole: they are theirs", async () => {
    const g = freshId('g');
    const [a, b] = ['a', 'b'].map((name): Member => ({ id: freshId(name), groups: [g] }));
    const sideA = (await s.openSide(a!, { group_id: g })).body.id;
    await s.openSide(b!, { group_id: g });
    const mine = await s.upload(a!, sideA, file('mine.txt'));
    const aOut: Member = { id: a!.id, groups: [] };
    const feed = await s.feed(aOut);
    expect(feed.map((event) => [event.type, event.data.object.redacted ?? false])).toEqual([
      ['conversation.created', false],
      ['attachment.created', false],
      ['conversation.updated', false],
    ]);
    expect(feed[1]!.data.object).toMatchObject({ id: mine.id, filename: 'mine.txt' });
  });
});

describe('a member who rejoins (the group in the token again)', () => {
  it('reads every event of the thread whole again, those of the period they were out included, exactly as a member does', async () => {
    const scene = await leaveScene();
    const redacted = await s.feed(scene.bOut);
    expect(redacted.some((event) => event.data.object.redacted === true)).toBe(true);
    const back: Member = { id: scene.b.id, groups: ['another', scene.g] };
    expect(await s.feed(back)).toEqual(scene.memberFeed);
    const during = scene.memberFeed.find((event) => event.type === 'attachment.updated')!;
    expect((await s.call(back, 'GET', `/v1/events/${during.id}`)).body).toEqual(during);
    expect((await s.attachment(back, scene.uploads[1]!.id)).status).toBe(200);
  });
});

describe('a stale token (the identity provider removed the user, the token still lists the group)', () => {
  it('is a member until it expires: it makes a side and reads what reaches it whole; the next token without the group reads it redacted', async () => {
    const g = freshId('g');
    const a: Member = { id: freshId('a'), groups: [g] };
    const stale: Member = { id: freshId('c'), groups: [g] };
    const fresh: Member = { id: stale.id, groups: [] };
    const sideA = (await s.openSide(a, { group_id: g })).body.id;
    // Refused with the fresh token, made with the stale one.
    expectNotAMember(await s.call(fresh, 'POST', '/v1/conversations', { form: { group_id: g } }), 'group_id');
    expect((await s.openSide(stale, { group_id: g })).status).toBe(201);
    const uploaded = await s.upload(a, sideA, file('after-removal.txt'));

    const asStale = await s.feedOf(stale, (events) => events.some((event) => event.data.object.id === uploaded.id));
    expect(asStale.find((event) => event.type === 'attachment.created')!.data.object).toMatchObject({
      id: uploaded.id,
      filename: 'after-removal.txt',
    });
    const asFresh = await s.feed(fresh);
    expect(asFresh.map((event) => [event.type, event.data.object.redacted ?? false])).toEqual([
      ['conversation.created', false],
      ['attachment.created', true],
      ['conversation.updated', true],
    ]);
    expect(JSON.stringify(asFresh)).not.toContain(uploaded.id);
  });
});
