import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_USER_ID_BYTES } from '../../shared/dynamo/keys.js';
import { type CallInit, type Json, startTestApi, type TestApi, type TestResponse } from '../support/api.js';
import { download, upload } from '../support/attachments.js';
import { propertyRuns } from '../support/properties.js';

/**
 * Property-based: hostile values for every parameter of every route (query,
 * form, JSON, multipart fields, filenames and part types, headers, path ids,
 * token claims), sent over HTTP to the local server. Whatever the input:
 * - the answer is documented (the OpenAPI check in t.call), never 5xx, and
 *   comes within CALL_TIMEOUT_MS (a hang fails the call);
 * - a refused request (4xx) changed nothing the user can list;
 * - after an accepted one, GET and the lists of what it touched answer 200.
 * Seeded (PROPERTY_SEED varies it), 40 runs each, every one of them.
 */
const SEED = 1010;
const CALL_TIMEOUT_MS = 5_000;
// 40 runs take 1 to 8 s on a loaded 2-core machine; past 30 s a property fails (propertyRuns).
const RUNS = propertyRuns(SEED, 40, 30_000);
const TEST_TIMEOUT_MS = 60_000;

let t: TestApi;
beforeAll(async () => {
  t = await startTestApi();
});
afterAll(() => t.close());

// ---- Hostile values ----------------------------------------------------------------

const PROTOTYPE_NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'prototype', '__defineGetter__'];
const tricky = fc.constantFrom(
  '',
  ' ',
  '\u0000',
  '\t',
  '\n',
  '\u007f',
  '\u0085',
  '\ud800',
  'a\udc00b',
  '\udbff',
  '\u{10ffff}',
  '\u202e',
  '\ufeff',
  '%',
  '%zz',
  '%00',
  '..',
  '../../etc/passwd',
  'C:\\x\\y',
  '.',
  'true',
  'false',
  'null',
  '0',
  '-1',
  '1e3',
  '1.5',
  '9007199254740993',
  'x'.repeat(129),
  '\u{1f600}'.repeat(128),
  '\u{1f600}'.repeat(129),
  'é'.repeat(300),
  'e\u0301',
  'conv_01ARZ3NDEKTSV4RRFFQ69G5FAV',
  'att_01ARZ3NDEKTSV4RRFFQ69G5FAV',
  '<script>',
  '"quoted"',
  "it's",
  '#',
  'a#b',
  '\\',
  ...PROTOTYPE_NAMES,
);
const hostileString = fc.oneof(
  { weight: 3, arbitrary: tricky },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 300 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 20 }) },
);
const jsonValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.constant(null),
  fc.array(hostileString, { maxLength: 2 }),
  fc.dictionary(hostileString, hostileString, { maxKeys: 2 }),
);
// Where a route takes no parameters, the names of other routes' (and of stored fields) are the likely mistakes.
const OTHER_NAMES = ['limit', 'force', 'is_muted', 'id', 'contact_id', 'created_at', 'file_url'];
const nameOf = (known: string[]) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...(known.length > 0 ? known : OTHER_NAMES)) },
    { weight: 2, arbitrary: fc.constantFrom(...PROTOTYPE_NAMES) },
    { weight: 1, arbitrary: hostileString },
  );
/** Values a client can type in a form or query: hostile strings, and the ones that mean something. */
const formValue = fc.oneof(hostileString, fc.constantFrom('true', 'false', '', '1', '100', '101', '1700000000', 'c1', 'g1'));

/** Every UTF-8 byte percent-encoded (a lone surrogate goes as EF BF BD, which is all a URL can carry). */
const percentEncoded = (text: string) => [...Buffer.from(text, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');
// Pieces no encoder would produce: invalid UTF-8, broken escapes, empty pairs.
const rawPiece = fc.constantFrom('%ED%A0%80', '%FF', '%C3', '%', '%zz', '', '=', '==', 'a=1=2', '+', '%2B');

type Pairs = [string, string][];
const pairsOf = (known: string[]) => fc.array(fc.tuple(nameOf(known), formValue), { maxLength: 4 });
const urlEncoded = (pairs: Pairs, raw: string[]) =>
  [...pairs.map(([name, value]) => `${percentEncoded(name)}=${percentEncoded(value)}`), ...raw].join('&');
const queryOf = (known: string[]) =>
  fc.tuple(pairsOf(known), fc.array(rawPiece, { maxLength: 2 })).map(([pairs, raw]) => {
    const text = urlEncoded(pairs, raw);
    return text === '' ? '' : `?${text}`;
  });

/** A form or JSON body (or another content type altogether), as the bytes and header a client sends. */
const bodyOf = (known: string[]) =>
  fc.oneof(
    fc.tuple(pairsOf(known), fc.array(rawPiece, { maxLength: 1 })).map(([pairs, raw]) => ({
      body: urlEncoded(pairs, raw),
      type: 'application/x-www-form-urlencoded',
      illFormed: false,
    })),
    fc.array(fc.tuple(nameOf(known), jsonValue), { maxLength: 4 }).map((pairs) => ({
      // A lone surrogate anywhere in a name or string value: no store can hold it, so the request must be refused.
      illFormed: pairs.some(([name, value]) => !isWellFormed(name) || (typeof value === 'string' && !isWellFormed(value))),
      // Written by hand: JSON.stringify escapes a lone surrogate as \udxxx, which JSON.parse gives back.
      body: `{${pairs.map(([name, value]) => `${JSON.stringify(name)}:${JSON.stringify(value) ?? 'null'}`).join(',')}}`,
      type: 'application/json',
    })),
    fc
      .tuple(
        fc.constantFrom('{', '[]', 'null', '"x"', '{"a":1,"a":2}', '', 'a=1'),
        fc.constantFrom('application/json', 'application/x-www-form-urlencoded', 'text/plain', '', 'application/json; charset=latin1'),
      )
      .map(([body, type]) => ({ body, type, illFormed: false })),
  );

const HEADER_NAMES = [
  ...PROTOTYPE_NAMES,
  'x-anything',
  'idempotency-key',
  'Idempotency-Key',
  'origin',
  'accept',
  'cookie',
  'x-forwarded-for',
  'content-type',
  'authorization',
];
const headerValue = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)), maxLength: 300 }),
  fc.constantFrom('', ' ', 'Bearer x', 'Bearer', 'multipart/form-data', 'a'.repeat(256)),
);
const headersArbitrary = fc.dictionary(fc.constantFrom(...HEADER_NAMES), headerValue, { maxKeys: 3 });

/** Stands for the id of the property's own object, which exists when the request is sent. */
const VALID_ID = '(the target id)';
const pathId = fc.oneof(
  { weight: 2, arbitrary: fc.constant(VALID_ID) },
  // '.' and '..' (sent as %2e, %2e%2e) are dot segments: a URL client removes them, so the request names another path.
  { weight: 2, arbitrary: hostileString.filter((id) => !['', '.', '..'].includes(id)).map(percentEncoded) },
  { weight: 1, arbitrary: fc.constantFrom('%ED%A0%80', '%2F', '%00', 'conv_01ARZ3NDEKTSV4RRFFQ69G5FAV', 'att_01ARZ3NDEKTSV4RRFFQ69G5FAV') },
);
const idIn = (id: string, valid: string) => (id === VALID_ID ? valid : id);

// ---- What every answer must be -----------------------------------------------------

async function send(user: string | null, method: string, path: string, init: CallInit = {}): Promise<TestResponse> {
  const response = await t.call(user, method, path, { ...init, timeoutMs: CALL_TIMEOUT_MS });
  expect(response.status, `${method} ${path} answered ${response.status}: ${response.text}`).toBeLessThan(500);
  // A function's answer carries x-request-id; a gateway response carries the id in x-amzn-requestid only.
  if (response.status >= 400) {
    expect(response.body.error.request_id).toBe(response.headers.get('x-request-id') ?? response.headers.get('x-amzn-requestid'));
  }
  return response;
}

const isWellFormed = (text: string) => !/\p{Surrogate}/u.test(text);

/** A query naming anything the route does not take is refused (400), whatever else is wrong, unless the token is. */
function expectUnknownRefused(query: string, known: string[], response: TestResponse) {
  const names = [...new URLSearchParams(query.slice(1)).keys()];
  if (names.some((name) => !known.includes(name)) && response.status !== 401) expect(response.status).toBe(400);
}

/**
 * Everything of the user's that a client can see, file_url and its expiry aside (freshly signed on every
 * answer), and the scan's state, which the scanner's stand-in moves on its own (scanning.test.ts).
 */
async function snapshot(user: string) {
  const conversations = await send(user, 'GET', '/v1/conversations?limit=100');
  const attachments = await send(user, 'GET', '/v1/attachments?limit=100');
  expect([conversations.status, attachments.status]).toEqual([200, 200]);
  return {
    conversations: conversations.body.data,
    attachments: attachments.body.data.map(
      ({ file_url: _, file_url_expires_at: _expiry, scan_status: _scan, ...rest }: Record<string, unknown>) => rest,
    ),
  };
}

/** The property's user, with one conversation and one attachment in it to aim at. */
class Target {
  private static count = 0;
  readonly user = `prop-${++Target.count}`;
  conversationId = '';
  attachmentId = '';
  state: Awaited<ReturnType<typeof snapshot>> | undefined;

  async ensure() {
    if (!this.conversationId) {
      this.conversationId = (await send(this.user, 'POST', '/v1/conversations', { form: { contact_id: `base-${Date.now()}` } })).body.id;
    }
    if (!this.attachmentId) {
      // Outside the conversation: deleting that one must not take this one along (docs/api.md allows seconds for that).
      this.attachmentId = (await upload(t, this.user, { bytes: 'base', filename: 'base.txt' })).body.id;
    }
    this.state = await snapshot(this.user);
  }

  /** A refused request leaves everything as it was; an accepted one moves the baseline. */
  async settle(response: TestResponse) {
    const after = await snapshot(this.user);
    if (response.status >= 400) expect(after).toEqual(this.state);
    this.state = after;
  }
}

async function conversationReadable(user: string | null, conversation: Record<string, Json>, init: CallInit = {}) {
  expect((await send(user, 'GET', `/v1/conversations/${conversation.id}`, init)).status).toBe(200);
  for (const filter of ['contact_id', 'group_id'] as const) {
    if (conversation[filter] !== null) {
      const list = await send(user, 'GET', `/v1/conversations?${filter}=${encodeURIComponent(conversation[filter])}`, init);
      expect(list.body.data.map((c: { id: string }) => c.id)).toContain(conversation.id);
    }
  }
  expect((await send(user, 'GET', '/v1/conversations', init)).status).toBe(200);
}

async function attachmentReadable(user: string, attachment: Record<string, Json>) {
  const got = await send(user, 'GET', `/v1/attachments/${attachment.id}`);
  expect(got.status).toBe(200);
  expect((await download(got.body.file_url)).status).toBe(200);
  expect((await send(user, 'GET', '/v1/attachments')).status).toBe(200);
  if (attachment.conversation_id) {
    const list = await send(user, 'GET', `/v1/attachments?conversation_id=${attachment.conversation_id}`);
    expect(list.body.data.map((a: { id: string }) => a.id)).toContain(attachment.id);
  }
}

/** Runs a property against a fresh target, for the run count or the time budget. */
const onTarget =
  <T extends unknown[]>(property: (target: Target) => fc.IAsyncPropertyWithHooks<T>) =>
  async () => {
    const target = new Target();
    await target.ensure();
    await fc.assert(property(target), RUNS);
  };

interface HostileBody {
  body: string;
  type: string;
  illFormed: boolean;
}

/** A POST or PUT with a hostile body: refused in the error shape, or accepted and readable after. */
async function sendBody(
  target: Target,
  method: string,
  path: string,
  { body, type, illFormed }: HostileBody,
  readable: (user: string, object: Record<string, Json>) => Promise<void>,
  headers: Record<string, string> = {},
) {
  const response = await send(target.user, method, path, { body, headers: { 'content-type': type, ...headers } });
  expectUnknownRefused(new URL(path, 'http://x').search, [], response);
  if (illFormed) expect(response.status).toBeGreaterThanOrEqual(400);
  if (response.status < 300) await readable(target.user, response.body);
  await target.settle(response);
}

// ---- Every route -------------------------------------------------------------------

const LIST_CONVERSATIONS = ['limit', 'starting_after', 'ending_before', 'muted', 'archived', 'pinned', 'group_id', 'contact_id'];
const LIST_ATTACHMENTS = ['limit', 'starting_after', 'ending_before', 'conversation_id'];
const CREATE = ['contact_id', 'group_id'];
const UPDATE = ['is_pinned', 'is_muted', 'pinned_message_id', 'archived_at'];

describe('no hostile input makes a route answer 5xx, hang, or store what it cannot serve', () => {
  it.each([
    ['GET /v1/conversations', '/v1/conversations', LIST_CONVERSATIONS],
    ['GET /v1/attachments', '/v1/attachments', LIST_ATTACHMENTS],
  ])(
    '%s: hostile query parameters and headers',
    async (_, path, known) => {
      const target = new Target();
      await target.ensure();
      await fc.assert(
        fc.asyncProperty(queryOf(known), headersArbitrary, async (query, headers) => {
          const response = await send(target.user, 'GET', `${path}${query}`, { headers });
          expectUnknownRefused(query, known, response);
          await target.settle(response);
        }),
        RUNS,
      );
    },
    TEST_TIMEOUT_MS,
  );

  it.each([
    { kind: 'conversation', base: '/v1/conversations' },
    { kind: 'attachment', base: '/v1/attachments' },
  ])(
    'GET and DELETE of one $kind: hostile path ids, query parameters and headers',
    async ({ kind, base }) => {
      const target = new Target();
      await target.ensure();
      const validId = () => (kind === 'conversation' ? target.conversationId : target.attachmentId);
      await fc.assert(
        fc.asyncProperty(fc.constantFrom('GET', 'DELETE'), pathId, queryOf([]), headersArbitrary, async (method, id, query, headers) => {
          const response = await send(target.user, method, `${base}/${idIn(id, validId())}${query}`, { headers });
          expectUnknownRefused(query, [], response);
          await target.settle(response);
          if (method === 'DELETE' && response.status === 200) {
            // The target is gone: make another for the next runs.
            if (kind === 'conversation') target.conversationId = '';
            else target.attachmentId = '';
            await target.ensure();
          }
        }),
        RUNS,
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'POST /v1/conversations: hostile bodies, query parameters, headers and Idempotency-Keys',
    onTarget((target) =>
      fc.asyncProperty(bodyOf(CREATE), queryOf([]), headersArbitrary, (body, query, headers) =>
        sendBody(target, 'POST', `/v1/conversations${query}`, body, conversationReadable, headers),
      ),
    ),
    TEST_TIMEOUT_MS,
  );

  it(
    'PUT /v1/conversations/:id: hostile bodies, path ids and query parameters',
    onTarget((target) =>
      fc.asyncProperty(bodyOf(UPDATE), pathId, queryOf([]), (body, id, query) =>
        sendBody(target, 'PUT', `/v1/conversations/${idIn(id, target.conversationId)}${query}`, body, conversationReadable),
      ),
    ),
    TEST_TIMEOUT_MS,
  );

  it(
    'PUT /v1/attachments/:id: hostile filenames and bodies, path ids and query parameters',
    onTarget((target) => {
      const renames: fc.Arbitrary<HostileBody> = fc.oneof(
        hostileString.map((filename) => ({
          body: JSON.stringify({ filename }),
          type: 'application/json',
          illFormed: !isWellFormed(filename),
        })),
        hostileString.map((filename) => ({
          body: `filename=${percentEncoded(filename)}`,
          type: 'application/x-www-form-urlencoded',
          illFormed: false,
        })),
        bodyOf(['filename']),
      );
      return fc.asyncProperty(renames, pathId, queryOf([]), (body, id, query) =>
        sendBody(target, 'PUT', `/v1/attachments/${idIn(id, target.attachmentId)}${query}`, body, attachmentReadable),
      );
    }),
    TEST_TIMEOUT_MS,
  );

  it(
    'POST /v1/attachments: hostile multipart fields, filenames, part types, bodies and Idempotency-Keys',
    async () => {
      const target = new Target();
      await target.ensure();
      const boundary = 'prop-boundary-1010';
      const filenameParam = fc.oneof(
        hostileString.map((name) => Buffer.from(`; filename="${name}"`, 'utf8')),
        hostileString.map((name) => Buffer.from(`; filename*=UTF-8''${percentEncoded(name)}`, 'latin1')),
        fc.constantFrom(
          Buffer.from('; filename="\xff\xfe.txt"', 'latin1'),
          Buffer.from('; filename=""'),
          Buffer.from("; filename*=UTF-8''%ED%A0%80.pdf"),
          Buffer.alloc(0),
        ),
      );
      const partType = fc.oneof(
        fc.constantFrom(
          '',
          ';;;',
          'pdf',
          'image/*',
          'text/plain',
          'application/pdf; x=',
          'APPLICATION/JSON',
          'application/octet-stream',
          'a/b/c',
        ),
        headerValue,
      );
      const field = fc.tuple(nameOf(['conversation_id', 'message_id', 'file']), formValue);
      const multipart = fc.record({
        fields: fc.array(field, { maxLength: 3 }),
        conversation: fc.boolean(),
        filename: filenameParam,
        type: partType,
        bytes: fc.uint8Array({ minLength: 0, maxLength: 64 }),
        files: fc.constantFrom(1, 1, 1, 0, 2),
      });
      await fc.assert(
        fc.asyncProperty(multipart, queryOf([]), headersArbitrary, async (form, query, headers) => {
          const parts: Buffer[] = [];
          const fields: [string, string][] = form.conversation ? [['conversation_id', target.conversationId], ...form.fields] : form.fields;
          for (const [name, value] of fields) {
            parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`, 'utf8'));
          }
          for (let i = 0; i < form.files; i++) {
            const typeLine = form.type === '' ? '' : `Content-Type: ${form.type}\r\n`;
            parts.push(
              Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"`),
              form.filename,
              Buffer.from(`\r\n${typeLine}\r\n`),
              Buffer.from(form.bytes),
              Buffer.from('\r\n'),
            );
          }
          parts.push(Buffer.from(`--${boundary}--\r\n`));
          const response = await send(target.user, 'POST', `/v1/attachments${query}`, {
            body: Buffer.concat(parts),
            headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, ...headers },
          });
          expectUnknownRefused(query, [], response);
          if (response.status < 300) await attachmentReadable(target.user, response.body);
          await target.settle(response);
        }),
        RUNS,
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'every route: hostile tokens and claims are 401, or a user whose data stays readable',
    async () => {
      const claims = fc.record(
        {
          sub: fc.oneof(
            { weight: 4, arbitrary: hostileString },
            fc.integer(),
            fc.constant(null),
            fc.array(hostileString, { maxLength: 1 }),
            fc.constant('x'.repeat(3000)),
          ),
          exp: fc.oneof(
            { weight: 4, arbitrary: fc.constant(Math.floor(Date.now() / 1000) + 600) },
            fc.constant(1),
            fc.constant('soon'),
            fc.double(),
            fc.constant(Number.MAX_SAFE_INTEGER),
          ),
          iat: fc.oneof(fc.integer(), hostileString),
          [PROTOTYPE_NAMES[0]!]: fc.oneof(fc.constant(null), hostileString),
        },
        { requiredKeys: ['sub', 'exp'] },
      );
      const header = fc.oneof(
        { weight: 4, arbitrary: fc.constant({ alg: 'HS256', typ: 'JWT' }) },
        fc.constant({ alg: 'none' }),
        fc.constant({ alg: 'HS512' }),
        fc.constant({ alg: 'RS256', kid: '__proto__' }),
      );
      await fc.assert(
        fc.asyncProperty(header, claims, async (jwtHeader, payload) => {
          const authorization = `Bearer ${hs256(jwtHeader, payload, t.api.authSecret)}`;
          const created = await send(null, 'POST', '/v1/conversations', { form: { contact_id: 'token-c' }, headers: { authorization } });
          expect([200, 201, 401]).toContain(created.status);
          const { sub } = payload;
          if (typeof sub === 'string' && (!isWellFormed(sub) || Buffer.byteLength(sub) > MAX_USER_ID_BYTES))
            expect(created.status).toBe(401);
          if (created.status < 300) await conversationReadable(null, created.body, { headers: { authorization } });
        }),
        RUNS,
      );
    },
    TEST_TIMEOUT_MS,
  );
});

/** A JWT signed with the local secret over whatever header and claims the test chose. */
function hs256(header: unknown, payload: unknown, secret: string): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
  const signed = `${encode(header)}.${encode(payload)}`;
  return `${signed}.${createHmac('sha256', secret).update(signed).digest('base64url')}`;
}
