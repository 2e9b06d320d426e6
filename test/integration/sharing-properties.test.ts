import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { propertyRuns } from '../support/properties.js';
import {
  type Attachment,
  expectNotAMember,
  expectNotFound,
  expectNotOwner,
  freshId,
  idsOf,
  type Member,
  sharingApi,
  type Thread,
} from '../support/sharing.js';

/**
 * Property-based: the membership rule of docs/api.md ("Sharing") over
 * generated worlds: users with groups in their tokens, direct threads
 * (a conversation with oneself among them) and group threads, and uploads by
 * their members, among them former members of a group (they uploaded while
 * their token listed it; it no longer does). For every reader and every
 * attachment:
 * - GET by id is 200 iff the reader uploaded it or is a current member of its
 *   thread (direct: one of its two users; group: the token lists the group),
 *   else 404 like a missing id;
 * - a rename by a member who is not the uploader is 403 not_owner, by anyone
 *   else 404, and the name stays;
 * - the reader's conversation_id is their own side of the thread, or null
 *   while they hold none; uploaded_by is the uploader;
 * - a side's thread list holds exactly the thread's attachments, newest first,
 *   for a current member, and is 403 not_a_member for a former one.
 * Each run has users and groups of its own, on one server; seeded
 * (PROPERTY_SEED varies it), a count of runs, every one of them.
 */
// 12 runs take about 16 s on a loaded 2-core machine (20 took 27 s); past 100 s the property fails (propertyRuns).
const RUNS = propertyRuns(1919, 12, 100_000);
const TEST_TIMEOUT_MS = 150_000;

const s = sharingApi();

type ThreadSpec = { kind: 'direct'; users: [number, number] } | { kind: 'group'; group: number };

/** Users' groups (indexes), threads between them, and uploads as (thread, uploader) choices taken modulo what exists. */
const worlds = fc.record({ users: fc.integer({ min: 2, max: 4 }), groups: fc.integer({ min: 1, max: 2 }) }).chain(({ users, groups }) =>
  fc.record({
    claims: fc.array(fc.subarray(Array.from({ length: groups }, (_, index) => index)), { minLength: users, maxLength: users }),
    threads: fc.array(
      fc.oneof(
        fc.record({ kind: fc.constant('direct' as const), users: fc.tuple(fc.nat(users - 1), fc.nat(users - 1)) }),
        fc.record({ kind: fc.constant('group' as const), group: fc.nat(groups - 1) }),
      ),
      { minLength: 1, maxLength: 3 },
    ),
    uploads: fc.array(fc.record({ thread: fc.nat(), uploader: fc.nat() }), { minLength: 1, maxLength: 4 }),
  }),
);

type World = typeof worlds extends fc.Arbitrary<infer W> ? W : never;

interface Shared {
  attachment: Attachment;
  thread: number;
  uploader: number;
}

async function checkWorld(world: World) {
  const prefix = freshId('w');
  const groupId = (group: number) => `${prefix}-g${group}`;
  // Readers as their tokens are now.
  const users: Member[] = world.claims.map((groups, index) => ({ id: `${prefix}-u${index}`, groups: groups.map(groupId) }));
  // Direct (0, 1) and (1, 0) are one thread: each thread once.
  const threadKey = (thread: ThreadSpec) =>
    thread.kind === 'group' ? `g${thread.group}` : `d${Math.min(...thread.users)}-${Math.max(...thread.users)}`;
  const threads: ThreadSpec[] = [...new Map(world.threads.map((thread) => [threadKey(thread), thread] as const)).values()];

  const isMember = (user: number, thread: ThreadSpec) =>
    thread.kind === 'direct' ? thread.users.includes(user) : world.claims[user]!.includes(thread.group);
  /** The user's side of the thread, as POST /v1/conversations names it (for a member, or whoever holds a side). */
  const sideOf = (user: number, thread: ThreadSpec): Thread =>
    thread.kind === 'group'
      ? { group_id: groupId(thread.group) }
      : { contact_id: users[thread.users[0] === user ? thread.users[1] : thread.users[0]]!.id };

  /** Sides opened by POST, by `${user}/${thread}`: their ids are known before any read. */
  const opened = new Map<string, string>();
  const shared: Shared[] = [];
  for (const choice of world.uploads) {
    const thread = choice.thread % threads.length;
    const spec = threads[thread]!;
    const uploader = spec.kind === 'direct' ? spec.users[choice.uploader % 2]! : choice.uploader % users.length;
    // Whoever uploads into a group's thread was its member then; a token without the group now makes a former member.
    const writer: Member =
      spec.kind === 'group'
        ? { id: users[uploader]!.id, groups: [...new Set([...users[uploader]!.groups!, groupId(spec.group)])] }
        : users[uploader]!;
    const side = (await s.openSide(writer, sideOf(uploader, spec))).body.id;
    opened.set(`${uploader}/${thread}`, side);
    const attachment = await s.upload(writer, side, { bytes: `${prefix} ${shared.length}`, filename: `f${shared.length}.txt` });
    expect(attachment).toMatchObject({ uploaded_by: writer.id, conversation_id: side });
    shared.push({ attachment, thread, uploader });
  }

  for (const [readerIndex, reader] of users.entries()) {
    for (const { attachment, thread, uploader } of shared) {
      const spec = threads[thread]!;
      const seen = await s.attachment(reader, attachment.id);
      const member = readerIndex === uploader || isMember(readerIndex, spec);
      // The uploader's own renames are the attachments tests'; here, everyone else's.
      const rename =
        readerIndex === uploader
          ? undefined
          : await s.call(reader, 'PUT', `/v1/attachments/${attachment.id}`, { form: { filename: 'renamed.txt' } });
      if (!member) {
        expectNotFound(seen);
        expectNotFound(rename!);
        continue;
      }
      if (rename) expectNotOwner(rename);
      expect(seen.status, `${reader.id} reading ${attachment.id} of ${JSON.stringify(spec)}: ${seen.text}`).toBe(200);
      expect(seen.body).toMatchObject({
        id: attachment.id,
        uploaded_by: users[uploader]!.id,
        filename: attachment.filename,
        created_at: attachment.created_at,
      });
      const known = opened.get(`${readerIndex}/${thread}`);
      if (known !== undefined) expect(seen.body.conversation_id).toBe(known);
      else if (seen.body.conversation_id !== null) {
        // A side the fan-out made (a direct contact's) after the reader's last POST: it is theirs, and of this thread.
        expect(idsOf(await s.sides(reader, sideOf(readerIndex, spec)))).toEqual([seen.body.conversation_id]);
      }
    }
  }

  // Nobody's refused rename changed a name.
  for (const { attachment, uploader } of shared) {
    expect((await s.attachment(users[uploader]!, attachment.id)).body.filename).toBe(attachment.filename);
  }

  for (const [key, side] of opened) {
    const [user, thread] = key.split('/').map(Number) as [number, number];
    const response = await s.call(users[user]!, 'GET', `/v1/attachments?limit=100&conversation_id=${side}`);
    if (!isMember(user, threads[thread]!)) {
      expectNotAMember(response, 'conversation_id');
      continue;
    }
    expect(response.status, response.text).toBe(200);
    const ofThread = shared.filter((item) => item.thread === thread).map((item) => item.attachment.id);
    expect(idsOf(response.body.data)).toEqual(ofThread.reverse());
    expect(response.body.data.every((item: Attachment) => item.conversation_id === side)).toBe(true);
  }
}

describe('the membership rule', () => {
  it(
    'lets exactly the uploader and the thread’s current members see an attachment, only the uploader change it, each through their own side',
    async () => {
      await fc.assert(fc.asyncProperty(worlds, checkWorld), RUNS);
    },
    TEST_TIMEOUT_MS,
  );
});
