import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { REPOSITORY_ROOT } from '../../../infra/declarations/repository.js';
import { DynamoAttachmentStore } from '../../../shared/attachments/dynamo-store.js';
import type { AttachmentRecord, UploadIntent } from '../../../shared/attachments/model.js';
import { DynamoConversationStore } from '../../../shared/conversations/dynamo-store.js';
import type { ThreadChange } from '../../../shared/conversations/fan-out.js';
import type { ConversationFilter } from '../../../shared/conversations/model.js';
import { readStateCases } from '../../../shared/conversations/read-state.js';
import { SideDelivery } from '../../../shared/conversations/side-delivery.js';
import { Outbox } from '../../../shared/events/outbox.js';
import { EventStore } from '../../../shared/events/store.js';
import { DynamoIdempotencyStore } from '../../../shared/idempotency/dynamo-store.js';
import type { Claim } from '../../../shared/idempotency/model.js';
import { DynamoSessionCompletion, DynamoUploadSessionStore } from '../../../shared/uploads/dynamo-store.js';
import type { SessionRecord } from '../../../shared/uploads/model.js';

/**
 * Every expression the stores send names attributes only through
 * ExpressionAttributeNames and values only through ExpressionAttributeValues:
 * a bare attribute name can be a reserved word DynamoDB refuses (`status`,
 * `name`, `state`…) and is how the kit (shared/dynamo/expressions.ts) gets
 * bypassed. Each store runs through each of its methods against a client
 * that records what it is sent and answers as DynamoDB would.
 */

type Input = Record<string, unknown>;
type Answer = (operation: string, input: Input) => unknown;

class RecordingClient {
  readonly sent: { operation: string; input: Input }[] = [];
  constructor(private readonly answer: Answer) {}
  async send(command: { constructor: { name: string }; input: Input }): Promise<unknown> {
    const operation = command.constructor.name.replace(/Command$/, '');
    this.sent.push({ operation, input: command.input });
    return this.answer(operation, command.input);
  }
  asClient(): DynamoDBDocumentClient {
    return this as unknown as DynamoDBDocumentClient;
  }
}

const KEYWORDS = new Set(['AND', 'OR', 'NOT', 'BETWEEN', 'IN', 'SET', 'REMOVE', 'ADD', 'DELETE']);
const FUNCTIONS = new Set([
  'attribute_exists',
  'attribute_not_exists',
  'attribute_type',
  'begins_with',
  'contains',
  'size',
  'if_not_exists',
  'list_append',
]);

/** The problems of one request's expressions: bare words, placeholders without a definition, definitions no expression uses. */
function problemsOf(input: Input): string[] {
  const problems: string[] = [];
  const expressions = Object.entries(input).filter(([key, value]) => key.endsWith('Expression') && typeof value === 'string') as [
    string,
    string,
  ][];
  const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const values = (input.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
  const used = new Set<string>();
  for (const [key, expression] of expressions) {
    const rest = expression.replace(/[#:][A-Za-z0-9_]+/g, (placeholder) => {
      used.add(placeholder);
      if (!(placeholder in (placeholder.startsWith('#') ? names : values))) problems.push(`${key}: ${placeholder} is not defined`);
      return ' ';
    });
    // A function's name touches its parenthesis; a keyword's does not (`NOT (…)`).
    for (const match of rest.matchAll(/[A-Za-z_][A-Za-z0-9_.]*(\()?/g)) {
      const word = match[0].replace(/\($/, '');
      const isFunction = match[1] !== undefined;
      if (isFunction ? !FUNCTIONS.has(word) : !KEYWORDS.has(word)) problems.push(`${key}: bare ${word} in ${expression}`);
    }
    if (/[^\s#:A-Za-z0-9_(),=<>.]/.test(rest)) problems.push(`${key}: unexpected characters in ${expression}`);
  }
  for (const placeholder of [...Object.keys(names), ...Object.keys(values)]) {
    if (!used.has(placeholder)) problems.push(`${placeholder} is defined but no expression uses it`);
  }
  return problems;
}

/** Every request (and every item of a transaction) that carries an expression, with its problems. */
function audit(client: RecordingClient): { checked: number; problems: string[] } {
  const requests = client.sent.flatMap(({ operation, input }) =>
    operation === 'TransactWrite'
      ? (input.TransactItems as Record<string, Input>[]).flatMap((item) =>
          Object.entries(item).map(([kind, inner]) => ({ where: `${operation}.${kind}`, input: inner })),
        )
      : [{ where: operation, input }],
  );
  const withExpressions = requests.filter(({ input }) => Object.keys(input).some((key) => key.endsWith('Expression')));
  return {
    checked: withExpressions.length,
    problems: withExpressions.flatMap(({ where, input }) => problemsOf(input).map((problem) => `${where}: ${problem}`)),
  };
}

const cancelled = (codes: string[]) =>
  Object.assign(new Error('cancelled'), { name: 'TransactionCanceledException', CancellationReasons: codes.map((Code) => ({ Code })) });
const conditionFailed = () => Object.assign(new Error('failed'), { name: 'ConditionalCheckFailedException' });

const USER = 'user-1';
const conversationItem = {
  pk: USER,
  sk: 'conv_1',
  id: 'conv_1',
  contact_id: 'c1',
  created_at: 1,
  last_active_at: 100,
  last_opened_at: 50,
  is_muted: true,
  muted_until: 5,
};
const INTENT: UploadIntent = { attachmentId: 'att_1', run: 'run', fileKey: 'files/u/att_1/run', expiresAt: 1_700_000_000 };
const attachment = (conversationId: string | null): AttachmentRecord => ({
  id: 'att_1',
  message_id: null,
  filename: 'a.txt',
  file_type: 'text/plain',
  file_size: 1,
  created_at: 10,
  uploaded_by: USER,
  placement: conversationId === null ? null : { conversation_id: conversationId, counterpart: { kind: 'group', id: 'g1' } },
  file_key: 'files/u/att_1/run',
  scan_status: 'clean' as const,
});
const session: SessionRecord = {
  id: 'upl_1',
  status: 'pending',
  attachment_id: 'att_1',
  upload_id: 'u',
  filename: 'a.bin',
  file_size: 10,
  file_type: 'application/octet-stream',
  part_size: 10,
  part_count: 1,
  expires_at: 10,
  conversation_id: 'conv_1',
  message_id: null,
  created_at: 1,
};

/** DynamoDB's answers: items found, writes done. `failFirst` refuses the first transaction for the conversation's condition. */
function dynamo(options: { failFirstTransaction?: boolean; claimFailsOnce?: boolean } = {}): RecordingClient {
  let transactions = 0;
  let claims = 0;
  return new RecordingClient((operation, input) => {
    switch (operation) {
      case 'Get':
        if (input.TableName === 'idempotency') return { Item: { ...(input.Key as object), state: 'in_progress', expires_at: 0 } };
        return { Item: (input.Key as { sk: string }).sk.startsWith('contact#') ? { conversation_id: 'conv_1' } : conversationItem };
      case 'Query':
        if (input.TableName === 'events')
          return {
            Items: [{ pk: USER, sk: 'e#000000000001', type: 'conversation.created', expires_at: 100, event: '{}' }],
            Count: 1,
            ScannedCount: 1,
          };
        return { Items: input.IndexName === 'by_mute_end' ? [conversationItem] : [{ pk: USER, sk: 'att_1' }], ScannedCount: 1 };
      case 'TransactWrite':
        transactions += 1;
        if (options.failFirstTransaction && transactions === 1) {
          // The conversation's activity (its only item on the conversations table) fails its condition.
          throw cancelled(
            (input.TransactItems as Record<string, Input>[]).map((item) =>
              Object.values(item)[0]!.TableName === 'conversations' ? 'ConditionalCheckFailed' : 'None',
            ),
          );
        }
        return {};
      case 'Update':
        if ((input.TableName as string) === 'idempotency' && options.claimFailsOnce && claims++ === 0) throw conditionFailed();
        return { Attributes: { ...conversationItem, seed: 'seed' } };
      case 'Delete':
        return { Attributes: session };
      default:
        return {};
    }
  });
}

const page = { limit: 2 };
const outboxOf = (client: RecordingClient) => new Outbox(client.asClient(), 'events', () => 10);
const FILTERS: ConversationFilter[] = [
  {},
  { muted: true },
  { muted: false, archived: true },
  { pinned: false, unread: true, muted: true },
  { contact_id: 'c1', group_id: 'g1', archived: false, muted: false },
];

const runs: [string, (client: RecordingClient) => Promise<unknown>][] = [
  [
    'conversations',
    async (client) => {
      const store = new DynamoConversationStore(client.asClient(), 'conversations', outboxOf(client), () => 10);
      await store.findOrCreate(USER, { kind: 'contact', id: 'c1' }, undefined, 'request-1');
      await store.update(
        USER,
        'conv_1',
        { is_pinned: true, mute: { kind: 'until', until: 20 }, pinned_message_id: 'm', archived_at: 3, last_opened_at: 4 },
        'request-1',
        new Set(),
      );
      await store.update(
        USER,
        'conv_1',
        { mute: { kind: 'off' }, pinned_message_id: null, archived_at: null, last_opened_at: null },
        'request-1',
        new Set(),
      );
      await store.get(USER, 'conv_1');
      for (const filter of FILTERS) await store.list(USER, filter, page);
      await store.remove(USER, 'conv_1', 'request-1');
      await store.sideOf(USER, { kind: 'contact', id: 'c1' });
      for await (const sides of store.sidesOf('g#g1')) void sides;
    },
  ],
  [
    'fan-out',
    async (client) => {
      const store = new DynamoConversationStore(client.asClient(), 'conversations', outboxOf(client), () => 10);
      const delivery = new SideDelivery(client.asClient(), 'conversations', 'events', store, outboxOf(client), () => 10, {
        serveUnscannable: false,
      });
      const record = { ...attachment('conv_9'), uploaded_by: 'c1', created_at: 200 };
      const changes: ThreadChange[] = [
        { kind: 'created', id: 'r1', record },
        { kind: 'renamed', id: 'r2', record: { ...record, filename: 'b.txt' }, before: record },
        { kind: 'removed', id: 'r3', record },
      ];
      await delivery.deliver({ userId: USER, counterpart: { kind: 'contact', id: 'c1' }, changes });
      await delivery.deliver({
        userId: USER,
        counterpart: { kind: 'group', id: 'g1' },
        conversationId: 'conv_1',
        changes: changes.slice(1),
      });
    },
  ],
  [
    'attachments',
    async (client) => {
      const store = new DynamoAttachmentStore(client.asClient(), 'attachments', 'conversations', outboxOf(client));
      await store.intend(INTENT);
      await store.add(attachment(null), 'request-1', INTENT);
      await store.add(attachment('conv_1'), 'request-1', INTENT);
      await store.get('att_1');
      await store.rename(USER, 'att_1', 'b.txt', 'request-1');
      await store.remove(USER, 'att_1', 'request-1');
      await store.listUploads(USER, page);
      await store.listThread('g#g1', page);
      await store.abandon(INTENT);
      await store.removeAllOf(USER, 'conv_1');
    },
  ],
  [
    'conversation activity, re-read after its condition failed (a check only: the stored activity is newer)',
    async (client) =>
      new DynamoAttachmentStore(client.asClient(), 'attachments', 'conversations', outboxOf(client)).add(
        attachment('conv_1'),
        'request-1',
        INTENT,
      ),
  ],
  [
    'upload sessions',
    async (client) => {
      const tables = { sessions: 'sessions', attachments: 'attachments', conversations: 'conversations' };
      const store = new DynamoUploadSessionStore(client.asClient(), tables);
      const completion = new DynamoSessionCompletion(client.asClient(), tables, outboxOf(client));
      await store.add(USER, session);
      await store.get(USER, 'upl_1');
      await completion.complete(USER, 'upl_1', attachment('conv_1'), 'request-1');
      await completion.complete(USER, 'upl_1', attachment(null), 'request-2');
      await store.fail(USER, 'upl_1', { code: 'file_size_mismatch', message: 'no' });
      await store.removeUnlessCompleted(USER, 'upl_1');
    },
  ],
  [
    'events',
    async (client) => {
      const store = new EventStore(client.asClient(), 'events', () => 10);
      await store.get(USER, 'evt_0000000100000000000000AB');
      await store.list(USER, undefined, page);
      await store.list(USER, { kind: 'resource', resource: 'attachment' }, { limit: 2, endingBefore: 'evt_0000000100000000000000AB' });
    },
  ],
  [
    'idempotency',
    async (client) => {
      const store = new DynamoIdempotencyStore(client.asClient(), 'idempotency');
      const claim: Claim = { userId: USER, key: 'k', fingerprint: 'f', owner: 'o', seed: 's', nowMs: 1_000, leaseMs: 5_000 };
      await store.claim(claim);
      await store.get(USER, 'k', 1_000);
      await store.complete(claim, { status: 201, body: { id: 'x' } });
      await store.release(claim);
    },
  ],
];

const OPTIONS: Record<string, Parameters<typeof dynamo>[0]> = {
  'conversation activity, re-read after its condition failed (a check only: the stored activity is newer)': { failFirstTransaction: true },
  // A claim that meets an expired record removes it (a conditional delete) and claims again.
  idempotency: { claimFailsOnce: true },
};

/** The paths the scripted answers lead to, so the scenarios above cannot silently stop reaching them. */
const REACHED: Record<string, string[]> = {
  'conversation activity, re-read after its condition failed (a check only: the stored activity is newer)': [
    'TransactWrite.ConditionCheck',
  ],
  idempotency: ['Delete'],
  conversations: ['Update', 'TransactWrite.Delete', 'TransactWrite.Put'],
  'fan-out': ['TransactWrite.Update', 'TransactWrite.Put'],
};

describe('store expressions', () => {
  it.each(runs)('%s: every attribute is a #name, every value a :value', async (name, run) => {
    const client = dynamo(OPTIONS[name]);
    await run(client);
    const { checked, problems } = audit(client);
    expect(checked).toBeGreaterThan(0);
    const sent = client.sent.flatMap(({ operation, input }) =>
      operation === 'TransactWrite'
        ? (input.TransactItems as object[]).flatMap((item) => Object.keys(item).map((kind) => `${operation}.${kind}`))
        : [operation],
    );
    for (const expected of REACHED[name] ?? []) expect(sent, expected).toContain(expected);
    expect(problems).toEqual([]);
  });

  it('the read-state cases: every condition, alone and as a transaction item joins it', () => {
    const writes = [{ kind: 'open', at: 5 }, { kind: 'clear' }, { kind: 'activity', at: 5 }] as const;
    for (const write of writes) {
      for (const candidate of readStateCases(write)) {
        expect(
          problemsOf({
            ConditionExpression: candidate.condition,
            ExpressionAttributeNames: candidate.names,
            ExpressionAttributeValues: candidate.values,
          }),
        ).toEqual([]);
      }
    }
  });

  it('the recording check itself finds a bare name, an undefined placeholder and an unused one', () => {
    expect(problemsOf({ ConditionExpression: 'attribute_not_exists(pk)' })).toEqual([
      'ConditionExpression: bare pk in attribute_not_exists(pk)',
    ]);
    expect(
      problemsOf({
        UpdateExpression: 'SET #s = :failed, failure = :failure',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: { ':failed': 1, ':failure': 2 },
      }),
    ).toEqual(['UpdateExpression: bare failure in SET #s = :failed, failure = :failure']);
    expect(problemsOf({ ConditionExpression: '#a = :b', ExpressionAttributeNames: { '#a': 'a', '#c': 'c' } })).toEqual([
      'ConditionExpression: :b is not defined',
      '#c is defined but no expression uses it',
    ]);
  });

  it('no module but the kit writes an expression or its names and values (so none escapes the checks above)', () => {
    const offenders: string[] = [];
    const walk = (directory: string): void => {
      for (const entry of readdirSync(directory, { withFileTypes: true })) {
        const path = join(directory, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (entry.name.endsWith('.ts') && !path.endsWith(join('shared', 'dynamo', 'expressions.ts'))) {
          readFileSync(path, 'utf8')
            .split('\n')
            .forEach((line, index) => {
              if (/\b(Condition|KeyCondition|Filter|Update|Projection)Expression\s*:|ExpressionAttribute(Names|Values)\s*:/.test(line)) {
                offenders.push(`${relative(REPOSITORY_ROOT, path)}:${index + 1}: ${line.trim()}`);
              }
            });
        }
      }
    };
    for (const directory of ['shared', 'functions']) walk(join(REPOSITORY_ROOT, directory));
    expect(offenders).toEqual([]);
  });
});
