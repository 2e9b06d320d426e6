import { DeleteCommand, GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { newId } from '../ids.js';
import { nowSeconds } from '../time.js';
import { unlessConditionFails } from '../dynamo/errors.js';
import { conversationKey, type ItemKey } from '../dynamo/keys.js';
import { queryPage } from '../dynamo/query-page.js';
import type { Page, PageRequest } from '../pagination.js';
import { counterpartOf, fromItem, toItem, updateExpression } from './item-codec.js';
import { listPlan, listQuery } from './list-plan.js';
import {
  newConversation,
  type Conversation,
  type ConversationChanges,
  type ConversationFilter,
  type ConversationStore,
  type Counterpart,
  type ListCost,
} from './model.js';
import { holderOf, uniquenessItem, uniquenessKey } from './uniqueness.js';

/**
 * A uniqueness record younger than this may belong to a create that is still
 * writing its conversation; an older one that points at nothing is left over
 * from a failed create and gets repaired.
 */
const CREATE_LEASE_MS = 3_000;
const CREATE_DEADLINE_MS = 10_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A conversation exists (its key is there): the condition of every write to one. */
const EXISTS = { ConditionExpression: 'attribute_exists(#pk)', ExpressionAttributeNames: { '#pk': 'pk' } };
const ABSENT = { ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': 'pk' } };

/** Conversations under the user's partition, sort key = conversation id (a ULID: creation order). */
export class DynamoConversationStore implements ConversationStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  /**
   * One conversation per (user, contact) and (user, group) without
   * transactions: a conditional put of a uniqueness record elects the single
   * creator, which then writes the conversation. Losers read the winner's
   * conversation. A record left pointing at nothing by a failed create is
   * removed once its lease is over, so it never blocks the user.
   */
  async findOrCreate(userId: string, counterpart: Counterpart): Promise<{ conversation: Conversation; created: boolean }> {
    const lockKey = uniquenessKey(userId, counterpart);
    const deadline = Date.now() + CREATE_DEADLINE_MS;
    while (Date.now() < deadline) {
      const { Item: lock } = await this.client.send(new GetCommand({ TableName: this.table, Key: lockKey, ConsistentRead: true }));
      if (lock) {
        const conversationId = holderOf(lock);
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
      const elected = await unlessConditionFails(
        this.client.send(new PutCommand({ TableName: this.table, Item: uniquenessItem(userId, counterpart, conversation.id), ...ABSENT })),
      );
      if (!elected) continue;
      await this.client.send(new PutCommand({ TableName: this.table, Item: toItem(userId, conversation), ...ABSENT }));
      return { conversation, created: true };
    }
    throw new Error(`Conversation create for ${counterpart.kind} did not settle in ${CREATE_DEADLINE_MS} ms`);
  }

  async get(userId: string, id: string): Promise<Conversation | undefined> {
    const { Item } = await this.client.send(new GetCommand({ TableName: this.table, Key: conversationKey(userId, id), ConsistentRead: true }));
    return Item ? fromItem(Item) : undefined;
  }

  async update(userId: string, id: string, changes: ConversationChanges): Promise<Conversation | undefined> {
    const expression = updateExpression(userId, changes);
    if (!expression) return this.get(userId, id);
    const updated = await unlessConditionFails(
      this.client.send(
        new UpdateCommand({
          TableName: this.table,
          Key: conversationKey(userId, id),
          ...expression,
          ConditionExpression: EXISTS.ConditionExpression,
          ExpressionAttributeNames: { ...expression.ExpressionAttributeNames, ...EXISTS.ExpressionAttributeNames },
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    return updated?.Attributes ? fromItem(updated.Attributes) : undefined;
  }

  async markActive(userId: string, id: string, at: number): Promise<boolean> {
    const marked = await unlessConditionFails(
      this.client.send(
        new UpdateCommand({
          TableName: this.table,
          Key: conversationKey(userId, id),
          UpdateExpression: 'SET #at = :at',
          ConditionExpression: EXISTS.ConditionExpression,
          ExpressionAttributeNames: { '#at': 'last_active_at', ...EXISTS.ExpressionAttributeNames },
          ExpressionAttributeValues: { ':at': at },
        }),
      ),
    );
    return marked !== undefined;
  }

  /**
   * The conversation goes first, then its uniqueness record: a failure in
   * between leaves a record pointing at nothing, which the next create repairs,
   * never a conversation that a second create could duplicate.
   */
  async remove(userId: string, id: string): Promise<boolean> {
    const removed = await unlessConditionFails(
      this.client.send(new DeleteCommand({ TableName: this.table, Key: conversationKey(userId, id), ...EXISTS, ReturnValues: 'ALL_OLD' })),
    );
    if (!removed) return false;
    if (removed.Attributes) await this.releaseLock(uniquenessKey(userId, counterpartOf(fromItem(removed.Attributes))), id);
    return true;
  }

  async list(userId: string, filter: ConversationFilter, page: PageRequest): Promise<{ page: Page<Conversation>; cost: ListCost }> {
    const plan = listPlan(userId, filter);
    const { query, startKeyOf } = listQuery(this.table, userId, plan);
    const { page: items, cost } = await queryPage(this.client, query, page, startKeyOf);
    return {
      page: { has_more: items.has_more, data: items.data.map(fromItem) },
      cost: { index: plan.index?.name ?? 'table', ...cost },
    };
  }

  private async releaseLock(lockKey: ItemKey, conversationId: string): Promise<void> {
    await unlessConditionFails(
      this.client.send(
        new DeleteCommand({
          TableName: this.table,
          Key: lockKey,
          ConditionExpression: '#holder = :id',
          ExpressionAttributeNames: { '#holder': 'conversation_id' },
          ExpressionAttributeValues: { ':id': conversationId },
        }),
      ),
    );
  }
}
