import sharp from 'sharp';
import { mulberry32 } from '../../../bench/population.js';
import { EICAR } from '../../../infra/local/scanner.js';
import { REPLAYED_HEADER } from '../../../shared/http/idempotency.js';
import type { TestApi, TestResponse } from '../api.js';
import { uploadForm } from '../attachments.js';
import { putPart } from '../upload-sessions.js';

/**
 * A seeded mix of API operations from several users, run concurrently as
 * real clients would: a 503 or a 429 is retried (with the same Idempotency-Key when
 * the request carries one), and some keyed uploads go through an upload
 * session. Every answer lands in the ledger, which the audit
 * holds against what the API shows afterwards. The users share threads: each
 * one's contacts are the other users (direct threads, both sides active) and
 * passive users who never call (their sides only the fan-out makes), and
 * each belongs to the groups the cast gives it, so that some users are inside
 * a group's thread and others outside it.
 */
export type OperationKind =
  | 'create_conversation'
  | 'update_conversation'
  | 'delete_conversation'
  | 'upload'
  | 'upload_with_key'
  | 'rename_attachment'
  | 'delete_attachment';

/** The share of keyed uploads sent through an upload session (drawn from the operation's otherwise unused counterpart draw). */
const SESSION_SHARE = 0.15;

const MIX: [OperationKind, number][] = [
  ['create_conversation', 0.22],
  ['update_conversation', 0.1],
  ['delete_conversation', 0.1],
  ['upload', 0.17],
  ['upload_with_key', 0.19],
  ['rename_attachment', 0.11],
  ['delete_attachment', 0.11],
];

/**
 * Who takes part, by short names (`u0`, `p0`): active users, passive ones
 * (contacts of the active users who never call), and each group's members
 * (the groups their tokens list). Names become `chaos-<seed>-<short>`.
 */
export interface CastOptions {
  users: number;
  passive: number;
  groups: Record<string, string[]>;
}

/** The cast of one run, by full user id. */
export interface Cast {
  /** The users who send operations. */
  users: string[];
  /** Contacts of every user who never call: only the fan-out gives them sides. */
  passive: string[];
  /** In no thread of anyone's: never a contact, in no group. */
  stranger: string;
  /** The groups each user's token lists (every user of the cast has an entry). */
  groupsOf: Map<string, string[]>;
}

export function castOf(seed: number, options: CastOptions): Cast {
  const name = (short: string) => `chaos-${seed}-${short}`;
  const users = Array.from({ length: options.users }, (_, index) => name(`u${index}`));
  const passive = Array.from({ length: options.passive }, (_, index) => name(`p${index}`));
  const stranger = name('stranger');
  const groupsOf = new Map([...users, ...passive, stranger].map((user) => [user, [] as string[]]));
  for (const [group, members] of Object.entries(options.groups)) {
    for (const member of members) groupsOf.get(name(member))!.push(group);
  }
  return { users, passive, stranger, groupsOf };
}

/** Everyone who may read: the users, the passive contacts and the stranger. */
export const everyoneIn = (cast: Cast): string[] => [...cast.users, ...cast.passive, cast.stranger];

export interface WorkloadOptions {
  seed: number;
  operations: number;
  cast: Cast;
  concurrency: number;
  /** Client attempts per operation (503s and 429s are retried). */
  attempts: number;
  retryDelayMs: number;
  /** Called when this many operations have started (e.g. to take S3 down). */
  milestones?: { at: number; run: () => void }[];
  /** Given the ledger before the first operation, to watch it fill while the workload runs. */
  onLedger?: (ledger: Ledger) => void;
}

/** One HTTP exchange: its status and error code (-1: no documented answer at all). */
export interface Attempt {
  status: number;
  code?: string;
  problem?: string;
  /**
   * The id the API gave the request (x-request-id; on a gateway's own answer
   * x-amzn-requestid, the same id): the events it caused carry it.
   * The server mints it and never takes one from the client, so a request
   * without a documented answer (-1) has none.
   */
  requestId?: string;
  /** Answered with Idempotent-Replayed: the first answer again, nothing done. */
  replayed?: true;
}

export interface ConversationCreate {
  op: number;
  userId: string;
  /** The other user of a direct thread, or the group. */
  counterpart: string;
  kind: 'contact' | 'group';
  key?: string;
  attempts: Attempt[];
  id?: string;
  /** When the client had its last answer (ms, this process's clock). */
  endedAt?: number;
}

export interface Upload {
  op: number;
  userId: string;
  key?: string;
  bytes: Buffer;
  filename: string;
  conversationId?: string;
  attempts: Attempt[];
  id?: string;
  /** The attachment's created_at, as its 201 answered. */
  createdAt?: number;
  /** Sent through an upload session: `attempts` are its completion's. */
  session?: SessionSteps;
  /** When the client sent its first request (ms, this process's clock). */
  startedAt: number;
}

/** An upload session's steps before its completion. */
export interface SessionSteps {
  /** The session, once its start was answered 201. */
  id?: string;
  /** The answers to its start and to the request for its part's URL. */
  steps: Attempt[];
}

export interface Change {
  op: number;
  userId: string;
  targetId: string;
  value: string;
  attempts: Attempt[];
}

export interface Removal {
  op: number;
  userId: string;
  targetId: string;
  attempts: Attempt[];
  /** When the client had its last answer (ms, this process's clock). */
  endedAt?: number;
}

export interface Ledger {
  users: string[];
  cast: Cast;
  creates: ConversationCreate[];
  conversationUpdates: Change[];
  conversationDeletes: Removal[];
  uploads: Upload[];
  renames: Change[];
  attachmentDeletes: Removal[];
  operations: Record<OperationKind, number>;
}

/** The upload an attachment came from, read from its filename (renames keep the `op<N>` part). */
export const originOf = (filename: string): number | undefined => {
  const match = /^op(\d+)-/.exec(filename);
  return match ? Number(match[1]) : undefined;
};

export const finalStatus = (attempts: readonly Attempt[]) => attempts.at(-1)?.status ?? -1;

export async function runWorkload(t: TestApi, options: WorkloadOptions): Promise<Ledger> {
  const random = mulberry32(options.seed);
  const pickWith = <T>(draw: number, items: readonly T[]): T | undefined =>
    items.length === 0 ? undefined : items[Math.floor(draw * items.length)];
  const { cast } = options;
  const { users } = cast;
  const ledger: Ledger = {
    users,
    cast,
    creates: [],
    conversationUpdates: [],
    conversationDeletes: [],
    uploads: [],
    renames: [],
    attachmentDeletes: [],
    operations: Object.fromEntries(MIX.map(([kind]) => [kind, 0])) as Record<OperationKind, number>,
  };
  options.onLedger?.(ledger);
  // What each user's client believes exists: acknowledged, not acknowledged as deleted.
  const conversations = new Map(users.map((user) => [user, new Set<string>()]));
  const attachments = new Map(users.map((user) => [user, new Set<string>()]));

  /** A user's contacts: every other user (a direct thread both sides use) and the passive ones. */
  const contactsOf = (userId: string) => [...users.filter((user) => user !== userId), ...cast.passive];
  /** Sends a request (built anew per attempt: a body stream is read once), retrying 503s and 429s (worth retrying later: docs/api.md, Errors). */
  const send = async (
    userId: string,
    method: string,
    path: string,
    init: () => Parameters<TestApi['call']>[3],
    maxAttempts = options.attempts,
  ): Promise<{ attempts: Attempt[]; last?: TestResponse }> => {
    const attempts: Attempt[] = [];
    let last: TestResponse | undefined;
    for (let attempt = 0; attempt < maxAttempts; attempt += 1) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, options.retryDelayMs));
      try {
        last = await t.call(userId, method, path, { groups: cast.groupsOf.get(userId)!, ...init() });
        attempts.push({ status: last.status, ...(last.body?.error?.code ? { code: last.body.error.code } : {}), ...requestOf(last) });
      } catch (error) {
        attempts.push({ status: -1, problem: String(error).slice(0, 300) });
        break;
      }
      if (last.status !== 503 && last.status !== 429) break;
    }
    return { attempts, last };
  };

  /** A DELETE; the client forgets the object once it was answered 200. */
  const remove = async (userId: string, targetId: string, op: number, records: Removal[], collection: string, known: Set<string>) => {
    const record: Removal = { op, userId, targetId, attempts: [] };
    records.push(record);
    record.attempts = (await send(userId, 'DELETE', `${collection}/${targetId}`, () => ({}))).attempts;
    record.endedAt = Date.now();
    if (finalStatus(record.attempts) === 200) known.delete(targetId);
  };

  /**
   * A keyed upload through an upload session, as a client of large files
   * sends one: the session started under a key of its own, the one part PUT
   * straight to S3 (retried when it fails), the completion under the
   * upload's key, sent again when `again` as a client that lost its answer
   * would. It stops where a step keeps failing: a session left pending is
   * the walked-away kind the leftovers sweep removes after it expires.
   */
  const throughSession = async (record: Upload, again: boolean) => {
    const { userId, op, bytes } = record;
    const session: SessionSteps = { steps: [] };
    record.session = session;
    const fields = {
      filename: record.filename,
      file_size: bytes.length,
      ...(record.conversationId ? { conversation_id: record.conversationId } : {}),
    };
    const started = await send(userId, 'POST', '/v1/upload_sessions', () => ({
      json: fields,
      headers: { 'idempotency-key': `session-${options.seed}-${op}` },
    }));
    session.steps.push(...started.attempts);
    if (started.last?.status !== 201) return;
    session.id = started.last.body.id as string;
    const signed = await send(userId, 'POST', `/v1/upload_sessions/${session.id}/parts`, () => ({ json: { part_numbers: [1] } }));
    session.steps.push(...signed.attempts);
    if (signed.last?.status !== 200) return;
    const url = signed.last.body.data[0].url as string;
    let etag: string | undefined;
    for (let attempt = 0; attempt < options.attempts && etag === undefined; attempt += 1) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, options.retryDelayMs));
      etag = await putPart(url, bytes).catch(() => undefined);
    }
    if (etag === undefined) return;
    const complete = () =>
      send(userId, 'POST', `/v1/upload_sessions/${session.id}/complete`, () => ({
        json: { parts: [{ part_number: 1, etag }] },
        headers: { 'idempotency-key': record.key! },
      }));
    const first = await complete();
    const repeat = again ? await complete() : undefined;
    record.attempts = [...first.attempts, ...(repeat?.attempts ?? [])];
    for (const answer of [first.last, repeat?.last])
      if (answer?.status === 201) [record.id, record.createdAt] = [answer.body.id, answer.body.created_at];
  };

  const plan = Array.from({ length: options.operations }, (_, op) => {
    let draw = random();
    const kind =
      MIX.find(([, share]) => {
        draw -= share;
        return draw < 0;
      })?.[0] ?? 'create_conversation';
    return {
      op,
      kind,
      userId: pickWith(random(), users)!,
      roll: random(),
      target: random(),
      counterpart: random(),
      size: 1 + Math.floor(random() * 3_000),
      seed: Math.floor(random() * 2 ** 31),
    };
  });

  const runOne = async ({ op, kind, userId, roll, target, counterpart: counterpartDraw, size, seed }: (typeof plan)[number]) => {
    const pick = <T>(items: readonly T[]) => pickWith(target, items);
    const known = [...conversations.get(userId)!];
    const files = [...attachments.get(userId)!];
    const effective: OperationKind =
      (kind === 'update_conversation' || kind === 'delete_conversation') && known.length === 0
        ? 'create_conversation'
        : (kind === 'rename_attachment' || kind === 'delete_attachment') && files.length === 0
          ? 'upload'
          : kind;
    ledger.operations[effective] += 1;
    switch (effective) {
      case 'create_conversation': {
        // Only groups the user's token lists: a refusal (403 not_a_member) is the membership tests' business.
        const groups = cast.groupsOf.get(userId)!;
        const contacts = contactsOf(userId);
        const group = roll < groups.length / (groups.length + contacts.length);
        const counterpart = pickWith(counterpartDraw, group ? groups : contacts)!;
        const form: Record<string, string> = group ? { group_id: counterpart } : { contact_id: counterpart };
        // Some creates carry an Idempotency-Key, as a careful client's would.
        const key = roll < 0.3 ? `create-${options.seed}-${op}` : undefined;
        const headers: Record<string, string> = key ? { 'idempotency-key': key } : {};
        const record: ConversationCreate = {
          op,
          userId,
          counterpart,
          kind: group ? 'group' : 'contact',
          ...(key ? { key } : {}),
          attempts: [],
        };
        ledger.creates.push(record);
        const { attempts, last } = await send(userId, 'POST', '/v1/conversations', () => ({ form, headers }));
        record.attempts = attempts;
        record.endedAt = Date.now();
        if (last && (last.status === 200 || last.status === 201)) {
          record.id = last.body.id;
          conversations.get(userId)!.add(last.body.id);
        }
        return;
      }
      case 'update_conversation': {
        const targetId = pick(known)!;
        const value = `pin-${op}`;
        const record: Change = { op, userId, targetId, value, attempts: [] };
        ledger.conversationUpdates.push(record);
        record.attempts = (
          await send(userId, 'PUT', `/v1/conversations/${targetId}`, () => ({ form: { pinned_message_id: value, is_pinned: 'true' } }))
        ).attempts;
        return;
      }
      case 'delete_conversation':
        return remove(userId, pick(known)!, op, ledger.conversationDeletes, '/v1/conversations', conversations.get(userId)!);
      case 'upload':
      case 'upload_with_key': {
        // A third of the uploads are images: the preview worker runs under the same faults (docs/api.md, "Previews");
        // a tenth carry the EICAR test file: the scanner stand-in finds them infected (docs/api.md, "Scanning").
        const bytes = size % 3 === 0 ? await imageOf(seed, size) : size % 10 === 1 ? infectedOf(seed, size) : bytesOf(seed, size);
        const conversationId = roll < 0.6 ? pick(known) : undefined;
        const record: Upload = {
          op,
          userId,
          bytes,
          filename: `op${op}-${userId}.bin`,
          ...(effective === 'upload_with_key' ? { key: `upload-${options.seed}-${op}` } : {}),
          ...(conversationId ? { conversationId } : {}),
          attempts: [],
          startedAt: Date.now(),
        };
        ledger.uploads.push(record);
        const fields: Record<string, string> = conversationId ? { conversation_id: conversationId } : {};
        const request = () => ({
          body: uploadForm({ bytes, filename: record.filename, type: 'application/octet-stream' }, fields),
          headers: record.key ? { 'idempotency-key': record.key } : ({} as Record<string, string>),
        });
        if (record.key && counterpartDraw < SESSION_SHARE) {
          await throughSession(record, roll < 0.25);
        } else if (record.key) {
          // A client that lost the first answer sends the same request again, with the same key.
          const { attempts, last } = await send(userId, 'POST', '/v1/attachments', request);
          const again = roll < 0.25 ? await send(userId, 'POST', '/v1/attachments', request) : undefined;
          record.attempts = [...attempts, ...(again?.attempts ?? [])];
          // The replay may answer 404 when the attachment was deleted since: the first answer still says what was made.
          for (const answer of [last, again?.last])
            if (answer?.status === 201) [record.id, record.createdAt] = [answer.body.id, answer.body.created_at];
        } else {
          // Without a key a retry could store the file twice: a careful client does not retry.
          const { attempts, last } = await send(userId, 'POST', '/v1/attachments', request, 1);
          record.attempts = attempts;
          if (last?.status === 201) [record.id, record.createdAt] = [last.body.id, last.body.created_at];
        }
        if (record.id) attachments.get(userId)!.add(record.id);
        return;
      }
      case 'rename_attachment': {
        const targetId = pick(files)!;
        const record: Change = { op, userId, targetId, value: '', attempts: [] };
        ledger.renames.push(record);
        const origin = ledger.uploads.find((upload) => upload.id === targetId)!.op;
        record.value = `op${origin}-renamed-by-${op}.txt`;
        record.attempts = (await send(userId, 'PUT', `/v1/attachments/${targetId}`, () => ({ form: { filename: record.value } }))).attempts;
        return;
      }
      case 'delete_attachment':
        return remove(userId, pick(files)!, op, ledger.attachmentDeletes, '/v1/attachments', attachments.get(userId)!);
    }
  };

  let next = 0;
  const worker = async () => {
    while (next < plan.length) {
      const item = plan[next++]!;
      for (const milestone of options.milestones ?? []) if (milestone.at === item.op) milestone.run();
      await runOne(item);
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return ledger;
}

/** What an answer says of its request: its id, and whether it was a replay. */
function requestOf(response: TestResponse): Pick<Attempt, 'requestId' | 'replayed'> {
  const requestId = response.headers.get('x-request-id') ?? response.headers.get('x-amzn-requestid');
  return { ...(requestId ? { requestId } : {}), ...(response.headers.get(REPLAYED_HEADER) === 'true' ? { replayed: true } : {}) };
}

/** A PNG from the seed and size: up to 1,500 px a side, so that some have both renditions and some one. */
export function imageOf(seed: number, size: number): Promise<Buffer> {
  const random = mulberry32(seed);
  const [red, green, blue] = [random(), random(), random()].map((share) => Math.floor(share * 256));
  return sharp({
    create: { width: 100 + (size % 1_400), height: 80 + ((size * 7) % 900), channels: 3, background: { r: red!, g: green!, b: blue! } },
  })
    .png()
    .toBuffer();
}

/** Bytes that hold the EICAR test file, from the seed: what the scanner stand-in reports as THREATS_FOUND. */
export const infectedOf = (seed: number, size: number): Buffer => Buffer.concat([Buffer.from(EICAR), bytesOf(seed, size)]);

/** The bytes of an upload, from its seed: the audit knows what each file must hold. */
export function bytesOf(seed: number, size: number): Buffer {
  const random = mulberry32(seed);
  return Buffer.from(Array.from({ length: size }, () => Math.floor(random() * 256)));
}
