import { randomBytes } from 'node:crypto';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import {
  attachmentUploads,
  type Composition,
  conversations as conversationService,
  conversationStore,
  dynamo,
  events,
  uploadSessions,
} from '../shared/app.js';
import type { Groups } from '../shared/auth/groups.js';
import { signToken } from '../shared/auth/tokens.js';
import type { Caller } from '../shared/caller.js';
import type { DynamoConversationStore } from '../shared/conversations/dynamo-store.js';
import { attachmentKey } from '../shared/dynamo/keys.js';
import type { ApiEvent } from '../shared/events/model.js';
import type { Image } from './events.js';
import { fileOf } from './multipart.js';
import { population } from './population.js';
import { putConversations } from './seed-conversations.js';

/**
 * One user with a few hundred conversations, one of them with a known
 * contact (so POST with that contact is the "already exists" path), and a
 * few small attachments in the first conversation, and upload sessions, in the DynamoDB and S3 at
 * DYNAMODB_ENDPOINT and S3_ENDPOINT. The cold starts and the warm runs use it.
 */
export interface Fixture {
  userId: string;
  authSecret: string;
  token: string;
  /** The groups of the population's group conversations: the user's token lists them all. */
  groups: Groups;
  contactId: string;
  conversationIds: string[];
  attachmentIds: string[];
  /** The conversation the attachments are in. */
  attachmentConversationId: string;
  /** Pending 1 GiB upload sessions with no parts yet (get, presign, abort). */
  sessionIds: string[];
  /** Sessions whose one part is in S3, ready to complete. */
  completableSessions: { id: string; parts: { part_number: number; etag: string }[] }[];
  /** Records of uploads into the first conversation as the attachments table holds them: what the fan-out gets, one per run. */
  fanOutItems: Image[];
  /** An event of the user's feed. */
  event: ApiEvent;
  store: DynamoConversationStore;
  /** The bench process's own clients and services, for the reference calls. */
  composition: Composition;
}

export async function seedFixture(composition: Composition, conversationCount: number, attachmentCount: number): Promise<Fixture> {
  const userId = 'user_bench';
  const authSecret = randomBytes(32).toString('base64url');
  const store = composition.use(conversationStore);
  const contactId = 'contact-known';
  await store.findOrCreate(userId, { kind: 'contact', id: contactId }, undefined, 'bench');
  const { conversations } = population(conversationCount, { seed: 7 });
  await putConversations(composition.use(dynamo), composition.config.conversationsTable, userId, conversations);
  const groups: Groups = new Set(conversations.flatMap((conversation) => (conversation.group_id ? [conversation.group_id] : [])));
  const caller: Caller = { userId, groups, requestId: 'bench' };
  const upload = async (index: number) => {
    const file = fileOf(4096);
    const attachment = await composition.use(attachmentUploads).upload(
      caller,
      {
        file: { filename: `photo-${index}.jpg`, fileType: file.type, bytes: file.bytes },
        conversation_id: conversations[0]!.id,
      },
      undefined,
    );
    return attachment.id;
  };
  const attachmentIds: string[] = [];
  for (let index = 0; index < attachmentCount; index += 1) attachmentIds.push(await upload(index));
  const fanOutItems: Image[] = [];
  for (let index = 0; index < attachmentCount; index += 1)
    fanOutItems.push(await storedItem(composition, attachmentKey(await upload(attachmentCount + index))));
  const [event] = (await composition.use(events).listEvents({ ...caller, groups: new Set() }, undefined, { limit: 1 })).data;
  if (!event) throw new Error('The fixture user has no event');
  const sessionIds: string[] = [];
  const completableSessions: Fixture['completableSessions'] = [];
  for (let index = 0; index < attachmentCount; index += 1) {
    sessionIds.push(
      (
        await composition
          .use(uploadSessions)
          .start(caller, { filename: 'video.mp4', file_size: 1024 ** 3, file_type: 'video/mp4' }, composition.use(conversationService))
      ).id,
    );
    const file = fileOf(4096);
    const session = await composition
      .use(uploadSessions)
      .start(caller, { filename: 'photo.jpg', file_size: file.bytes.length, file_type: file.type }, composition.use(conversationService));
    const [part] = await composition.use(uploadSessions).signParts(caller, session.id, [1]);
    const response = await fetch(part!.url, { method: 'PUT', body: file.bytes });
    await response.arrayBuffer();
    completableSessions.push({ id: session.id, parts: [{ part_number: 1, etag: response.headers.get('etag')! }] });
  }
  return {
    userId,
    authSecret,
    token: await signToken(authSecret, userId, { groups: [...groups] }),
    groups,
    contactId,
    conversationIds: conversations.map((conversation) => conversation.id),
    attachmentIds,
    attachmentConversationId: conversations[0]!.id,
    sessionIds,
    completableSessions,
    fanOutItems,
    event,
    store,
    composition,
  };
}

/** An item as DynamoDB holds it (attribute values), read by a client of its own. */
async function storedItem(composition: Composition, key: { pk: string; sk: string }): Promise<Image> {
  const { region, dynamodbEndpoint, credentials, attachmentsTable } = composition.config;
  const reader = new DynamoDBClient({
    region,
    ...(dynamodbEndpoint ? { endpoint: dynamodbEndpoint } : {}),
    ...(credentials ? { credentials } : {}),
  });
  try {
    const { Item } = await reader.send(
      new GetItemCommand({ TableName: attachmentsTable, Key: { pk: { S: key.pk }, sk: { S: key.sk } }, ConsistentRead: true }),
    );
    if (!Item) throw new Error(`No record of the upload ${key.pk}`);
    return Item as Image;
  } finally {
    reader.destroy();
  }
}
