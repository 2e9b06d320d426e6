import { EICAR } from '../../infra/local/scanner.js';
import { userFilesPrefix, userPreviewsPrefix } from '../../shared/files/keys.js';
import type { TestApi } from './api.js';
import { download, fileKeyOf } from './attachments.js';
import { waitThenLook } from './eventually.js';
import type { FaultyApi } from './faulty-api.js';

export interface ListedConversation {
  id: string;
  contact_id: string | null;
  group_id: string | null;
  pinned_message_id: string | null;
  created_at: number;
  last_active_at: number | null;
}

export interface ListedAttachment {
  id: string;
  conversation_id: string | null;
  filename: string;
  file_url: string | null;
  file_size: number;
  preview?: { status: 'pending' | 'ready' | 'failed'; thumbnails: { url: string }[] } | null;
  scan_status: 'pending' | 'clean' | 'infected' | 'unscannable' | 'not_scanned';
}

/**
 * What scanning allows a reader of an attachment (docs/api.md, "Scanning"):
 * no link or preview of an infected file for anyone, no link to a file not
 * yet clean for anyone but its uploader (unscannable held, the default), and
 * nothing pending once the scanner has answered (the audit's rounds wait).
 */
export function scanViolations(
  where: string,
  attachment: Pick<ListedAttachment, 'file_url' | 'scan_status' | 'preview'>,
  isUploader: boolean,
): Violation[] {
  const violations: Violation[] = [];
  const { scan_status: status } = attachment;
  if (status === 'pending') violations.push({ kind: 'scan still pending', detail: where });
  if (status === 'infected' && (attachment.file_url !== null || attachment.preview != null))
    violations.push({ kind: 'infected file served', detail: where });
  if (!isUploader && status !== 'clean' && status !== 'not_scanned' && attachment.file_url !== null)
    violations.push({ kind: `${status} file served to another reader`, detail: where });
  return violations;
}

/** What a user's data looks like from the outside: the lists of the API. */
export interface UserView {
  conversations: ListedConversation[];
  attachments: ListedAttachment[];
}

export interface Violation {
  kind: string;
  detail: string;
}

/** Every object of a list, page after page (starting_after); `groups`: those the reader's token lists. */
export async function listAll<T extends { id: string }>(
  t: TestApi,
  userId: string,
  path: string,
  groups?: readonly string[],
): Promise<T[]> {
  const all: T[] = [];
  let cursor: string | undefined;
  for (;;) {
    const separator = path.includes('?') ? '&' : '?';
    const response = await t.call(
      userId,
      'GET',
      `${path}${separator}limit=100${cursor ? `&starting_after=${cursor}` : ''}`,
      groups ? { groups } : {},
    );
    if (response.status !== 200) throw new Error(`GET ${path} answered ${response.status}: ${response.text}`);
    const page = response.body as { has_more: boolean; data: T[] };
    all.push(...page.data);
    if (!page.has_more) return all;
    cursor = page.data.at(-1)!.id;
  }
}

/** An event as GET /v1/events lists it. */
export interface FeedEvent {
  id: string;
  type: string;
  created_at: number;
  data: { object: Record<string, unknown>; previous_attributes?: Record<string, unknown> };
  request_id: string | null;
}

/** A user's whole feed, newest first, page after page; `filter` e.g. `type=attachment.*`. */
export const feedOf = (t: TestApi, userId: string, filter = '', groups?: readonly string[]): Promise<FeedEvent[]> =>
  listAll<FeedEvent>(t, userId, `/v1/events${filter ? `?${filter}` : ''}`, groups);

export async function viewOf(t: TestApi, userId: string): Promise<UserView> {
  return {
    conversations: await listAll<ListedConversation>(t, userId, '/v1/conversations'),
    attachments: await listAll<ListedAttachment>(t, userId, '/v1/attachments'),
  };
}

export interface AuditOptions {
  /** The bytes the attachment was uploaded with, when the test knows them. */
  expectedBytes?: (userId: string, attachment: ListedAttachment) => Buffer | undefined;
  /** Which upload the attachment came from (e.g. read from its filename): two attachments of one upload are a violation. */
  origin?: (userId: string, attachment: ListedAttachment) => string | undefined;
  /** The bucket holds only these users' files: every key in it is checked, not only those under the users' prefixes. */
  wholeBucket?: boolean;
  /** A file the bucket may hold without a record (e.g. assembled by a session nobody completed: its expiry removes it). */
  mayHoldUnlisted?: (key: string) => boolean;
}

/**
 * The invariants anyone can check from outside, for some users: every listed
 * attachment downloads (its exact bytes when `expectedBytes` knows them), the
 * bucket holds exactly the listed attachments' files, no attachment belongs to
 * a conversation that is gone, and at most one conversation exists per
 * contact and per group.
 */
export async function auditUsers(
  f: FaultyApi,
  userIds: readonly string[],
  options: AuditOptions = {},
): Promise<{ violations: Violation[]; views: Map<string, UserView> }> {
  const violations: Violation[] = [];
  const views = new Map<string, UserView>();
  const expectedKeys = new Set<string>();
  for (const userId of userIds) {
    const view = await viewOf(f.t, userId);
    views.set(userId, view);
    const conversationIds = new Set(view.conversations.map((c) => c.id));
    const byOrigin = new Map<string, string[]>();
    for (const attachment of view.attachments) {
      const origin = options.origin?.(userId, attachment);
      if (origin !== undefined) byOrigin.set(origin, [...(byOrigin.get(origin) ?? []), attachment.id]);
    }
    for (const [origin, ids] of byOrigin) {
      if (ids.length > 1) violations.push({ kind: 'one upload stored twice', detail: `${userId}/${origin}: ${ids.join(', ')}` });
    }
    for (const attachment of view.attachments) {
      const expected = options.expectedBytes?.(userId, attachment);
      violations.push(...scanViolations(`${userId}/${attachment.id}`, attachment, true));
      if (expected?.includes(EICAR) && attachment.scan_status !== 'infected' && attachment.scan_status !== 'unscannable')
        violations.push({ kind: 'EICAR file not infected', detail: `${userId}/${attachment.id}: ${attachment.scan_status}` });
      // An infected file has no link, and its bytes must be gone: its key is not expected, so the bucket's check finds them.
      if (attachment.file_url === null) continue;
      expectedKeys.add(fileKeyOf({ file_url: attachment.file_url }));
      const file = await download(attachment.file_url).catch((error: unknown) => ({
        status: `failed (${String(error)})`,
        bytes: Buffer.alloc(0),
      }));
      if (file.status !== 200) {
        violations.push({
          kind: 'record whose file is gone',
          detail: `${userId}/${attachment.id} (${attachment.filename}): download ${file.status}`,
        });
      } else if (expected ? !file.bytes.equals(expected) : file.bytes.length !== attachment.file_size) {
        violations.push({ kind: 'attachment with wrong bytes', detail: `${userId}/${attachment.id} (${attachment.filename})` });
      }
      violations.push(...(await auditPreview(userId, attachment, expectedKeys)));
      if (attachment.conversation_id !== null && !conversationIds.has(attachment.conversation_id)) {
        violations.push({
          kind: 'attachment in a deleted conversation',
          detail: `${userId}/${attachment.id} in ${attachment.conversation_id}`,
        });
      }
    }
    for (const [field, label] of [
      ['contact_id', 'contact'],
      ['group_id', 'group'],
    ] as const) {
      const byCounterpart = new Map<string, string[]>();
      for (const conversation of view.conversations) {
        const counterpart = conversation[field];
        if (counterpart !== null) byCounterpart.set(counterpart, [...(byCounterpart.get(counterpart) ?? []), conversation.id]);
      }
      for (const [counterpart, ids] of byCounterpart) {
        if (ids.length > 1)
          violations.push({ kind: `two conversations for one ${label}`, detail: `${userId}/${counterpart}: ${ids.join(', ')}` });
      }
    }
  }
  const stored = options.wholeBucket
    ? await f.storedKeys()
    : await Promise.all(
        userIds.flatMap((userId) => [f.storedKeys(userFilesPrefix(userId)), f.storedKeys(userPreviewsPrefix(userId))]),
      ).then((lists) => lists.flat());
  for (const key of stored) {
    if (!expectedKeys.has(key) && !options.mayHoldUnlisted?.(key)) violations.push({ kind: 'orphan S3 file (no record)', detail: key });
  }
  return { violations, views };
}

/**
 * A preview is settled once the cleanup and the worker have run (nothing
 * pending forever: the audit's rounds wait for it), and a ready one's
 * thumbnails are stored: they count as expected keys, so a thumbnail whose
 * record is gone, or that no ready preview lists, is an orphan of the bucket.
 */
async function auditPreview(userId: string, attachment: ListedAttachment, expectedKeys: Set<string>): Promise<Violation[]> {
  const { preview } = attachment;
  if (!preview) return [];
  if (preview.status === 'pending') return [{ kind: 'preview still pending', detail: `${userId}/${attachment.id}` }];
  const violations: Violation[] = [];
  for (const thumbnail of preview.thumbnails) {
    expectedKeys.add(fileKeyOf({ file_url: thumbnail.url }));
    const status = await download(thumbnail.url).then(
      (fetched) => fetched.status,
      (error: unknown) => `failed (${String(error)})`,
    );
    if (status !== 200) violations.push({ kind: 'thumbnail of a ready preview missing', detail: `${userId}/${attachment.id}: ${status}` });
  }
  return violations;
}

/**
 * Audits until nothing is wrong or `timeoutMs` has passed: what hangs off a
 * deleted resource is removed within seconds after the answer, not at once.
 * `also`: more checks of the same views (e.g. against the answers clients got).
 */
export async function settledAudit(
  f: FaultyApi,
  userIds: readonly string[],
  options: AuditOptions & { timeoutMs?: number; also?: (views: Map<string, UserView>) => Violation[] } = {},
): Promise<{ violations: Violation[]; views: Map<string, UserView> }> {
  return waitThenLook(
    async () => {
      const result = await auditUsers(f, userIds, options);
      result.violations.push(...(options.also?.(result.views) ?? []));
      return result;
    },
    (result) => result.violations.length === 0,
    options.timeoutMs ?? 10_000,
    // A round reads every user's views and downloads every file: not more often than this.
    500,
  );
}

export const summary = (violations: readonly Violation[]) => violations.map((v) => `${v.kind}: ${v.detail}`);
