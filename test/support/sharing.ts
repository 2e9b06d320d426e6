import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect } from 'vitest';
import type { LocalApiOptions } from '../../infra/local/server.js';
import { type CallInit, startTestApi, type TestApi, type TestResponse } from './api.js';
import { type FileSpec, uploadForm } from './attachments.js';
import { type FeedEvent, feedOf } from './audit.js';
import { eventually } from './eventually.js';

/**
 * The calls the sharing tests (docs/api.md, "Sharing") repeat: users who each
 * carry their token's groups, their sides of threads, uploads into them, and
 * what each reader sees of a thread's attachments.
 */

/** A user as their token says: the id (`sub`) and the groups claim (absent: no claim). */
export interface Member {
  id: string;
  groups?: readonly string[];
}

/** The thread a side belongs to, as POST /v1/conversations names it. */
export type Thread = { contact_id: string } | { group_id: string };

export interface Conversation {
  id: string;
  contact_id: string | null;
  group_id: string | null;
  last_active_at: number | null;
  last_opened_at: number | null;
  created_at: number;
  [field: string]: unknown;
}

export interface Attachment {
  id: string;
  conversation_id: string | null;
  filename: string;
  file_url: string;
  uploaded_by: string;
  created_at: number;
  [field: string]: unknown;
}

/** An attachment as an event shows it: without its link. */
export const withoutLink = ({ file_url: _url, file_url_expires_at: _expiry, ...shown }: Attachment): Record<string, unknown> => shown;

/** The fields of an attachment, in the contract's order. */
export const ATTACHMENT_FIELDS = [
  'id',
  'message_id',
  'conversation_id',
  'filename',
  'file_url',
  'file_url_expires_at',
  'file_type',
  'file_size',
  'uploaded_by',
  'created_at',
  'preview',
  'scan_status',
];

/** An id (user or group) that no other test of the run uses, so that every test starts from nothing shared. */
export const freshId = (name: string): string => `${name}-${randomBytes(4).toString('hex')}`;

/** The attachments' ids, in the order a list gave them. */
export const idsOf = (items: { id: string }[]): string[] => items.map((item) => item.id);

/** A refusal in the error shape, with the request's id. */
export function expectError(response: TestResponse, status: number, error: { type: string; code: string; param?: string }) {
  expect(response.status, response.text).toBe(status);
  expect(response.body.error).toMatchObject({ ...error, request_id: response.headers.get('x-request-id') });
}

export const expectNotFound = (response: TestResponse) =>
  expectError(response, 404, { type: 'invalid_request_error', code: 'resource_missing', param: 'id' });

export const expectNotOwner = (response: TestResponse) => expectError(response, 403, { type: 'permission_error', code: 'not_owner' });

export const expectNotAMember = (response: TestResponse, param?: string) =>
  expectError(response, 403, { type: 'permission_error', code: 'not_a_member', ...(param ? { param } : {}) });

export function sharingCalls(api: () => TestApi) {
  const call = (who: Member, method: string, path: string, init: CallInit = {}): Promise<TestResponse> =>
    api().call(who.id, method, path, { ...init, ...(who.groups ? { groups: who.groups } : {}) });

  const calls = {
    call,

    /** `who`'s side of the thread: 201 when new, 200 with the one they hold. */
    async openSide(who: Member, thread: Thread): Promise<TestResponse & { body: Conversation }> {
      const response = await call(who, 'POST', '/v1/conversations', { form: thread });
      expect([200, 201], response.text).toContain(response.status);
      return response;
    },

    /** An upload by `who`, into their side `conversationId` (or none), that must succeed. */
    async upload(who: Member, conversationId: string | null, file: FileSpec = { bytes: randomBytes(32) }): Promise<Attachment> {
      const fields: Record<string, string> = conversationId === null ? {} : { conversation_id: conversationId };
      const response = await call(who, 'POST', '/v1/attachments', { body: uploadForm(file, fields) });
      expect(response.status, response.text).toBe(201);
      return response.body;
    },

    attachment: (who: Member, id: string) => call(who, 'GET', `/v1/attachments/${id}`),

    /**
     * The attachment as `who` reads it once its scan is `status` (docs/api.md,
     * "Scanning"): another member's link comes with `clean`, after the scanner
     * stand-in's delay.
     */
    async scanned(who: Member, id: string, status = 'clean'): Promise<Attachment> {
      const read = await eventually(
        () => calls.attachment(who, id),
        (response) => response.status === 200 && response.body.scan_status === status,
        30_000,
      );
      expect(read.body.scan_status, read.text).toBe(status);
      return read.body;
    },

    conversation: async (who: Member, id: string): Promise<Conversation> => {
      const response = await call(who, 'GET', `/v1/conversations/${id}`);
      expect(response.status, response.text).toBe(200);
      return response.body;
    },

    /** One page of `who`'s attachments list (`query` e.g. `conversation_id=…&limit=2`), which must answer 200. */
    async list(who: Member, query = ''): Promise<{ has_more: boolean; data: Attachment[] }> {
      const response = await call(who, 'GET', `/v1/attachments${query ? `?${query}` : ''}`);
      expect(response.status, response.text).toBe(200);
      return response.body;
    },

    /** The sides `who` holds of a thread, found as a client would: GET /v1/conversations?contact_id= (or group_id=). */
    async sides(who: Member, thread: Thread, filters = ''): Promise<Conversation[]> {
      const [[name, value]] = Object.entries(thread) as [[string, string]];
      const response = await call(
        who,
        'GET',
        `/v1/conversations?limit=100&${name}=${encodeURIComponent(value)}${filters ? `&${filters}` : ''}`,
      );
      expect(response.status, response.text).toBe(200);
      return response.body.data;
    },

    /** `who`'s whole feed, oldest first. */
    feed: async (who: Member): Promise<FeedEvent[]> => (await feedOf(api(), who.id, '', who.groups)).reverse(),

    /** `who`'s feed, oldest first, once it holds at least `count` events (or `count` says it is complete). */
    feedOf: (who: Member, count: number | ((events: FeedEvent[]) => boolean)): Promise<FeedEvent[]> =>
      eventually(
        () => calls.feed(who),
        (events) => (typeof count === 'number' ? events.length >= count : count(events)),
      ),

    /** `who`'s one side of the thread once the fan-out has moved its last_active_at to at least `time`. */
    async sideActiveAt(who: Member, thread: Thread, time: number): Promise<Conversation> {
      const sides = await eventually(
        () => calls.sides(who, thread),
        (found) => found.length === 1 && (found[0]!.last_active_at ?? 0) >= time,
      );
      expect(sides, `${who.id}'s side of ${JSON.stringify(thread)} active at ${time}`).toHaveLength(1);
      expect(sides[0]!.last_active_at).toBeGreaterThanOrEqual(time);
      return sides[0]!;
    },
  };
  return calls;
}

/** A local API started before the file's tests and closed after them, with the sharing calls on it. */
export function sharingApi(options: LocalApiOptions = {}) {
  let api: TestApi | undefined;
  beforeAll(async () => {
    api = await startTestApi(options);
  });
  afterAll(() => api?.close());
  const t = () => api!;
  return { t, ...sharingCalls(t) };
}
