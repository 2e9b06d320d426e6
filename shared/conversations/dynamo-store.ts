import { BatchWriteCommand, DeleteCommand, GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { newId } from '../ids.js';
import { nowSeconds } from '../time.js';
import { isConditionFailed } from '../dynamo/errors.js';
import {
  CONVERSATION_SK_PREFIX,
  contactKey,
  conversationKey,
  counterpartKey,
  flagKey,
  groupKey,
  type Counterpart,
} from '../dynamo/keys.js';
import { queryPage } from '../dynamo/query-page.js';
import { conversationIndexes } from '../dynamo/tables.js';
import type { Page, PageRequest } from '../pagination.js';
import { listPlan } from './list-plan.js';
import {
  newConversation,
  type Conversation,
  type ConversationChanges,
  type ConversationFilter,
  type ConversationStore,
  type ListCost,
} from './model.js';

type Item = Record<string, unknown>;

/**
 * A uniqueness record younger than this may belong to a create that is still
 * writing its conversation; an older one that points at nothing is left over
 * from a failed create and gets repaired.
 */
const CREATE_LEASE_MS = 3_000;
const CREATE_DEADLINE_MS = 10_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class DynamoConversationStore implements ConversationStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  /**
   * One conversation per (user, contact) and (user, group) without
   * transactions (dynalite has none): a conditional put of a uniqueness record
   * elects the single creator, which then writes the conversation. Losers read
   * the winner's conversation. A record left pointing at nothing by a failed
   * create is removed once its lease is over, so it never blocks the user.
   */
  async findOrCreate(userId: string, counterpart: Counterpart): Promise<{ conversation: Conversation; created: boolean }> {
    const lockKey = counterpartKey(userId, counterpart);
    const deadline = Date.now() + CREATE_DEADLINE_MS;
    while (Date.now() < deadline) {
      const { Item: lock } = await this.client.send(
        new GetCommand({ TableName: this.table, Key: lockKey, ConsistentRead: true }),
      );
      if (lock) {
        const conversationId = lock.conversation_id as string;
        const existing = await this.get(userId, conversationId);
        if (existing) return { conversation: existing, created: false };
        if (Date.now() - (lock.locked_at_ms as number) < CREATE_LEASE_MS) {
          await sleep(25);
        } else {
          await this.releaseLock(lockKey, conversationId);
        }
        continue;
      }
      const conversation = newConversation(newId('conv'), counterpart, nowSeconds());
      try {
        await this.client.send(
          new PutCommand({
            TableName: this.table,
            Item: lockItem(userId, counterpart, conversation.id),
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        );
      } catch (error) {
        if (isConditionFailed(error)) continue;
        throw error;
      }
      await this.client.send(
        new PutCommand({
          TableName: this.table,
          Item: toItem(userId, conversation),
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      return { conversation, created: true };
    }
    throw new Error(`Conversation create for ${counterpart.kind} did not settle in ${CREATE_DEADLINE_MS} ms`);
  }

  async get(userId: string, id: string): Promise<Conversation | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.table, Key: conversationKey(userId, id), ConsistentRead: true }),
    );
    return Item ? fromItem(Item) : undefined;
  }

  async update(userId: string, id: string, changes: ConversationChanges): Promise<Conversation | undefined> {
    const expression = updateExpression(userId, changes);
    if (!expression) return this.get(userId, id);
    try {
      const { Attributes } = await this.client.send(
        new UpdateCommand({
          TableName: this.table,
          Key: conversationKey(userId, id),
          ...expression,
          ConditionExpression: 'attribute_exists(pk)',
          ReturnValues: 'ALL_NEW',
        }),
      );
      return Attributes ? fromItem(Attributes) : undefined;
    } catch (error) {
      if (isConditionFailed(error)) return undefined;
      throw error;
    }
  }

  async markActive(userId: string, id: string, at: number): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.table,
          Key: conversationKey(userId, id),
          UpdateExpression: 'SET last_active_at = :at',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':at': at },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }

  /**
   * The conversation goes first, then its uniqueness record: a failure in
   * between leaves a record pointing at nothing, which the next create repairs,
   * never a conversation that a second create could duplicate.
   */
  async remove(userId: string, id: string): Promise<boolean> {
    let removed: Item | undefined;
    try {
      ({ Attributes: removed } = await this.client.send(
        new DeleteCommand({
          TableName: this.table,
          Key: conversationKey(userId, id),
          ConditionExpression: 'attribute_exists(pk)',
          ReturnValues: 'ALL_OLD',
        }),
      ));
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
    if (removed) {
      await this.releaseLock(counterpartKey(userId, counterpartOf(fromItem(removed))), id);
    }
    return true;
  }

  async list(
    userId: string,
    filter: ConversationFilter,
    page: PageRequest,
  ): Promise<{ page: Page<Conversation>; cost: ListCost }> {
    const plan = listPlan(userId, filter);
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    let keyCondition: string;
    if (plan.index) {
      names['#key'] = plan.index.partitionKey;
      values[':key'] = plan.index.value;
      keyCondition = '#key = :key';
    } else {
      values[':user'] = userId;
      values[':prefix'] = CONVERSATION_SK_PREFIX;
      keyCondition = 'pk = :user AND begins_with(sk, :prefix)';
    }
    const residual = Object.entries(plan.residual).map(([attribute, value], index) => {
      names[`#f${index}`] = attribute;
      values[`:f${index}`] = value;
      return `#f${index} = :f${index}`;
    });
    const { page: items, cost } = await queryPage(
      this.client,
      {
        TableName: this.table,
        ...(plan.index ? { IndexName: plan.index.name } : { ConsistentRead: true }),
        KeyConditionExpression: keyCondition,
        ...(residual.length > 0 ? { FilterExpression: residual.join(' AND ') } : {}),
        ...(Object.keys(names).length > 0 ? { ExpressionAttributeNames: names } : {}),
        ExpressionAttributeValues: values,
      },
      page,
      (cursor) => ({ ...conversationKey(userId, cursor), ...(plan.index ? { [plan.index.partitionKey]: plan.index.value } : {}) }),
    );
    return {
      page: { has_more: items.has_more, data: items.data.map(fromItem) },
      cost: { index: plan.index?.name ?? 'table', ...cost },
    };
  }

  private async releaseLock(lockKey: { pk: string; sk: string }, conversationId: string): Promise<void> {
    try {
      await this.client.send(
        new DeleteCommand({
          TableName: this.table,
          Key: lockKey,
          ConditionExpression: 'conversation_id = :id',
          ExpressionAttributeValues: { ':id': conversationId },
        }),
      );
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
    }
  }
}

const BATCH_WRITE_MAX = 25;

/**
 * Writes many conversations of one user at once, each with its uniqueness
 * record, exactly as `findOrCreate` stores them: the seeding path of the
 * benchmark and of tests that need thousands of conversations. Not for the
 * API (it does not check for existing ones).
 */
export async function putConversations(
  client: DynamoDBDocumentClient,
  table: string,
  userId: string,
  conversations: readonly Conversation[],
  parallelBatches = 8,
): Promise<void> {
  const items = conversations.flatMap((conversation) => [
    toItem(userId, conversation),
    lockItem(userId, counterpartOf(conversation), conversation.id),
  ]);
  const batches: Item[][] = [];
  for (let start = 0; start < items.length; start += BATCH_WRITE_MAX) batches.push(items.slice(start, start + BATCH_WRITE_MAX));
  const writeBatch = async (batch: Item[]) => {
    let requests = batch.map((Item) => ({ PutRequest: { Item } }));
    for (let attempt = 0; requests.length > 0; attempt += 1) {
      if (attempt > 0) await sleep(Math.min(1_000, 2 ** attempt * 25));
      const { UnprocessedItems } = await client.send(new BatchWriteCommand({ RequestItems: { [table]: requests } }));
      requests = (UnprocessedItems?.[table] ?? []) as typeof requests;
    }
  };
  let next = 0;
  const worker = async () => {
    while (next < batches.length) await writeBatch(batches[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(parallelBatches, batches.length) }, worker));
}

function lockItem(userId: string, counterpart: Counterpart, conversationId: string): Item {
  return { ...counterpartKey(userId, counterpart), conversation_id: conversationId, locked_at_ms: Date.now() };
}

function counterpartOf(conversation: Conversation): Counterpart {
  return conversation.group_id ? { kind: 'group', id: conversation.group_id } : { kind: 'contact', id: conversation.contact_id ?? '' };
}

function toItem(userId: string, conversation: Conversation): Item {
  return {
    ...conversationKey(userId, conversation.id),
    ...conversation,
    [conversationIndexes.muted.partitionKey]: flagKey(userId, conversation.is_muted),
    [conversationIndexes.pinned.partitionKey]: flagKey(userId, conversation.is_pinned),
    [conversationIndexes.archived.partitionKey]: flagKey(userId, conversation.archived_at !== null),
    ...(conversation.group_id ? { [conversationIndexes.group.partitionKey]: groupKey(userId, conversation.group_id) } : {}),
    ...(conversation.contact_id ? { [conversationIndexes.contact.partitionKey]: contactKey(userId, conversation.contact_id) } : {}),
  };
}

function fromItem(item: Item): Conversation {
  const orNull = <T>(value: unknown) => (value === undefined ? null : (value as T));
  return {
    id: item.id as string,
    contact_id: orNull(item.contact_id),
    group_id: orNull(item.group_id),
    pinned_message_id: orNull(item.pinned_message_id),
    is_pinned: item.is_pinned === true,
    is_muted: item.is_muted === true,
    last_active_at: orNull(item.last_active_at),
    last_opened_at: orNull(item.last_opened_at),
    created_at: item.created_at as number,
    archived_at: orNull(item.archived_at),
  };
}

/** SET and REMOVE clauses for exactly the given fields, keeping the index keys in step. */
function updateExpression(userId: string, changes: ConversationChanges) {
  const set: string[] = [];
  const remove: string[] = [];
  const values: Record<string, unknown> = {};
  const assign = (attribute: string, value: unknown) => {
    set.push(`${attribute} = :${attribute}`);
    values[`:${attribute}`] = value;
  };
  if (changes.is_pinned !== undefined) {
    assign('is_pinned', changes.is_pinned);
    assign(conversationIndexes.pinned.partitionKey, flagKey(userId, changes.is_pinned));
  }
  if (changes.is_muted !== undefined) {
    assign('is_muted', changes.is_muted);
    assign(conversationIndexes.muted.partitionKey, flagKey(userId, changes.is_muted));
  }
  if (changes.pinned_message_id !== undefined) {
    if (changes.pinned_message_id === null) remove.push('pinned_message_id');
    else assign('pinned_message_id', changes.pinned_message_id);
  }
  if (changes.archived_at !== undefined) {
    if (changes.archived_at === null) remove.push('archived_at');
    else assign('archived_at', changes.archived_at);
    assign(conversationIndexes.archived.partitionKey, flagKey(userId, changes.archived_at !== null));
  }
  if (set.length === 0 && remove.length === 0) return undefined;
  const clauses = [set.length ? `SET ${set.join(', ')}` : '', remove.length ? `REMOVE ${remove.join(', ')}` : ''];
  return {
    UpdateExpression: clauses.filter(Boolean).join(' '),
    ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
  };
}
