import { GetCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dynamo, outbox } from '../../shared/app.js';
import { DynamoAttachmentStore } from '../../shared/attachments/dynamo-store.js';
import type { AttachmentRecord, UploadIntent } from '../../shared/attachments/model.js';
import { DynamoConversationStore } from '../../shared/conversations/dynamo-store.js';
import { toItem } from '../../shared/conversations/item-codec.js';
import { newConversation } from '../../shared/conversations/model.js';
import { uniquenessItem } from '../../shared/conversations/uniqueness.js';
import { expressions, itemAbsent } from '../../shared/dynamo/expressions.js';
import { conversationKey, counterpartKey } from '../../shared/dynamo/keys.js';
import { requestToken, transactWrite } from '../../shared/dynamo/transactions.js';
import { EventStore } from '../../shared/events/store.js';
import { fileKey } from '../../shared/files/keys.js';
import { newId } from '../../shared/ids.js';
import { DynamoSessionCompletion, DynamoUploadSessionStore } from '../../shared/uploads/dynamo-store.js';
import type { SessionRecord } from '../../shared/uploads/model.js';
import { startTestApi, type TestApi } from '../support/api.js';

/**
 * What the SDK does when a transaction's answer is lost: it sends the very
 * same request (same ClientRequestToken) again. These tests send it twice
 * against DynamoDB Local, as that retry would, and check that the second
 * send is answered as the first was, never as a failed condition.
 */
let t: TestApi;
/** Every TransactWriteItems the stores sent, as sent: what the SDK would send again. */
const sent: TransactWriteCommandInput[] = [];
beforeAll(async () => {
  t = await startTestApi();
  t.api.composition.use(dynamo).middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'TransactWriteItemsCommand') sent.push(structuredClone(args.input as TransactWriteCommandInput));
      return next(args);
    },
    { step: 'initialize', name: 'recordTransactions' },
  );
});
afterAll(() => t?.close());

const config = () => t.api.config;

/**
 * The store's last transaction sent again exactly (its items, with the feed's
 * head and events as that attempt read them, and its token), or under another
 * token: what the SDK's retry sends, and what another request's would.
 */
async function sendLastAgain(token?: string) {
  const last = sent.at(-1)!;
  return transactWrite(t.api.composition.use(dynamo), last.TransactItems!, token ?? last.ClientRequestToken!);
}

/** The types of the user's events, oldest first. */
async function eventTypes(userId: string): Promise<string[]> {
  const { page } = await new EventStore(t.api.composition.use(dynamo), config().eventsTable).list(userId, undefined, { limit: 100 });
  return page.data.map(({ event }) => event.type).reverse();
}

describe('a transaction sent again with its token (the SDK retry after a lost answer)', () => {
  it('answers committed again and writes nothing twice, while the same write under another token fails its condition', async () => {
    const user = 'retry-create';
    const counterpart = { kind: 'contact', id: 'zed' } as const;
    const conversation = newConversation(newId('conv'), counterpart, 1_700_000_000);
    const absent = expressions({ condition: itemAbsent() });
    const items = [
      { Put: { TableName: config().conversationsTable, Item: uniquenessItem(user, counterpart, conversation.id), ...absent } },
      { Put: { TableName: config().conversationsTable, Item: toItem(user, conversation), ...absent } },
    ];
    const token = requestToken('create-conversation', user, conversation.id);
    expect(await transactWrite(t.api.composition.use(dynamo), items, token)).toEqual({ committed: true });
    expect(await transactWrite(t.api.composition.use(dynamo), items, token)).toEqual({ committed: true });
    expect(await transactWrite(t.api.composition.use(dynamo), items, requestToken('another request'))).toEqual({
      committed: false,
      conditionFailed: [true, true],
    });
    const { Item } = await t.api.composition
      .use(dynamo)
      .send(new GetCommand({ TableName: config().conversationsTable, Key: counterpartKey(user, counterpart), ConsistentRead: true }));
    expect(Item?.conversation_id).toBe(conversation.id);
  });

  it('lets the request that deleted a conversation answer 200 when its delete is sent again, and another request 404', async () => {
    const store = new DynamoConversationStore(t.api.composition.use(dynamo), config().conversationsTable, t.api.composition.use(outbox));
    const { conversation } = await store.findOrCreate('retry-delete', { kind: 'group', id: 'g1' }, undefined, 'request-0');
    expect(await store.remove('retry-delete', conversation.id, 'request-1')).toBe(true);
    // The store reads the conversation and the feed's head before it deletes; a resent transaction skips those reads.
    expect((await sendLastAgain()).committed).toBe(true);
    expect((await sendLastAgain(requestToken('delete-conversation', 'retry-delete', conversation.id, 'request-2', '1'))).committed).toBe(
      false,
    );
    expect(await store.remove('retry-delete', conversation.id, 'request-3')).toBe(false);
    // One removal, one event.
    expect(await eventTypes('retry-delete')).toEqual(['conversation.created', 'conversation.deleted']);
  });

  it('finds an upload written again as existing, and lets an attachment delete sent again by the same request answer true, and another request false', async () => {
    const store = new DynamoAttachmentStore(
      t.api.composition.use(dynamo),
      config().attachmentsTable,
      config().conversationsTable,
      t.api.composition.use(outbox),
    );
    const id = newId('att');
    const record = attachmentRecord('retry-attachment', id, null);
    expect(await store.add(record, 'request-1', await intended(store, record))).toBe('added');
    // The same upload written again (a run of the same Idempotency-Key): its record is there, the caller answers with it.
    const again = { ...record, file_key: `${record.file_key}-2` };
    expect(await store.add(again, 'request-2', await intended(store, again))).toBe('existed');
    expect(await store.remove('retry-attachment', id, 'request-1')).toBe(true);
    expect((await sendLastAgain()).committed).toBe(true);
    expect(await store.remove('retry-attachment', id, 'request-2')).toBe(false);
    expect(await eventTypes('retry-attachment')).toEqual(['attachment.created', 'attachment.deleted']);
  });

  it('refuses an upload into a conversation that is gone, writing nothing', async () => {
    const store = new DynamoAttachmentStore(
      t.api.composition.use(dynamo),
      config().attachmentsTable,
      config().conversationsTable,
      t.api.composition.use(outbox),
    );
    const id = newId('att');
    const record = attachmentRecord('retry-attachment', id, newId('conv'));
    expect(await store.add(record, 'request-1', await intended(store, record))).toBe('conversation-missing');
    expect(await store.get(id)).toBeUndefined();
  });

  it('lets an upload session completion sent again by the same request answer completed, and another request find it closed', async () => {
    const user = 'retry-session';
    const store = sessionStore();
    const { conversation } = await new DynamoConversationStore(
      t.api.composition.use(dynamo),
      config().conversationsTable,
      t.api.composition.use(outbox),
    ).findOrCreate(user, { kind: 'contact', id: 'yan' }, undefined, 'request-0');
    const session = pendingSession(conversation.id);
    await store.add(user, session);
    const attachment = { ...attachmentRecord(user, session.attachment_id, conversation.id), created_at: 1_700_000_100 };
    expect(await sessionCompletion().complete(user, session.id, attachment, 'request-1')).toBe('completed');
    expect((await sendLastAgain()).committed).toBe(true);
    expect(await sessionCompletion().complete(user, session.id, attachment, 'request-2')).toBe('session_not_pending');
    expect(await eventTypes(user)).toEqual(['conversation.created', 'attachment.created', 'conversation.updated']);
    const { Item } = await t.api.composition
      .use(dynamo)
      .send(new GetCommand({ TableName: config().conversationsTable, Key: conversationKey(user, conversation.id), ConsistentRead: true }));
    expect(Item?.last_active_at).toBe(1_700_000_100);
  });

  it('refuses an upload session completion into a conversation that is gone, writing nothing', async () => {
    const user = 'retry-session-gone';
    const store = sessionStore();
    const conversationId = newId('conv');
    const session = pendingSession(conversationId);
    await store.add(user, session);
    const attachment = attachmentRecord(user, session.attachment_id, conversationId);
    expect(await sessionCompletion().complete(user, session.id, attachment, 'request-1')).toBe('conversation_missing');
    expect((await store.get(user, session.id))?.status).toBe('pending');
    expect(
      await new DynamoAttachmentStore(
        t.api.composition.use(dynamo),
        config().attachmentsTable,
        config().conversationsTable,
        t.api.composition.use(outbox),
      ).get(session.attachment_id),
    ).toBeUndefined();
  });
});

/** A record as an upload writes it, into the user's conversation with contact yan (or none). */
/** A record's run's intent, written as an upload writes it before its file. */
async function intended(store: DynamoAttachmentStore, record: AttachmentRecord): Promise<UploadIntent> {
  const intent = { attachmentId: record.id, run: record.file_key, fileKey: record.file_key, expiresAt: Math.ceil(Date.now() / 1000) + 600 };
  await store.intend(intent);
  return intent;
}

const attachmentRecord = (userId: string, id: string, conversationId: string | null): AttachmentRecord => ({
  id,
  message_id: null,
  filename: 'a.bin',
  file_type: 'application/octet-stream',
  file_size: 1,
  created_at: 1,
  uploaded_by: userId,
  placement: conversationId === null ? null : { conversation_id: conversationId, counterpart: { kind: 'contact', id: 'yan' } },
  file_key: fileKey(userId, id, 'run'),
  scan_status: 'clean' as const,
});

const sessionTables = () => ({
  sessions: config().uploadSessionsTable,
  attachments: config().attachmentsTable,
  conversations: config().conversationsTable,
});
const sessionStore = () => new DynamoUploadSessionStore(t.api.composition.use(dynamo), sessionTables());
const sessionCompletion = () => new DynamoSessionCompletion(t.api.composition.use(dynamo), sessionTables(), t.api.composition.use(outbox));

/** A pending one-part session into the conversation, as start records it. */
const pendingSession = (conversationId: string): SessionRecord => ({
  id: newId('upl'),
  status: 'pending',
  filename: 'a.bin',
  file_size: 1,
  file_type: 'application/octet-stream',
  part_size: 1,
  part_count: 1,
  expires_at: 1_700_086_400,
  conversation_id: conversationId,
  message_id: null,
  created_at: 1_700_000_000,
  attachment_id: newId('att'),
  upload_id: 'upload-1',
});
