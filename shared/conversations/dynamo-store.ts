import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { newId } from '../ids.js';
import { nowSeconds } from '../time.js';
import { unlessConditionFails } from '../dynamo/errors.js';
import { conversationKey } from '../dynamo/keys.js';
import { ConcurrentWrite, requestToken, transactWrite } from '../dynamo/transactions.js';
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
 * Creates that met another create's transaction on the same uniqueness record
 * try again this often (the other one has then committed or failed); only
 * liveness depends on it, never correctness.
 */
const CONFLICT_ATTEMPTS = 10;

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
   * One conversation per (user, contact) and (user, group): the uniqueness
   * record and the conversation are written in one transaction, each on the
   * condition that it does not exist yet. Exactly one concurrent create
   * commits; the others find the record and answer with its conversation.
   * The token makes the SDK's retry of a transaction whose answer was lost a
   * no-op that answers success, never a second conversation.
   */
  async findOrCreate(userId: string, counterpart: Counterpart): Promise<{ conversation: Conversation; created: boolean }> {
    for (let attempt = 1; ; attempt += 1) {
      const conversation = newConversation(newId('conv'), counterpart, nowSeconds());
      const outcome = await transactWrite(
        this.client,
        [
          { Put: { TableName: this.table, Item: uniquenessItem(userId, counterpart, conversation.id), ...ABSENT } },
          { Put: { TableName: this.table, Item: toItem(userId, conversation), ...ABSENT } },
        ],
        requestToken('create-conversation', userId, conversation.id),
      );
      if (outcome.committed) return { conversation, created: true };
      const existing = await this.holderOf(userId, counterpart);
      if (existing) return { conversation: existing, created: false };
      // Nothing holds the place: the other create failed, or its conversation was deleted since. Try again.
      if (attempt >= CONFLICT_ATTEMPTS) throw new ConcurrentWrite();
      await sleep(Math.random() * Math.min(1_000, 20 * 2 ** attempt));
    }
  }

  /** The conversation that holds the (user, counterpart) place, read consistently. */
  private async holderOf(userId: string, counterpart: Counterpart): Promise<Conversation | undefined> {
    const { Item: record } = await this.client.send(
      new GetCommand({ TableName: this.table, Key: uniquenessKey(userId, counterpart), ConsistentRead: true }),
    );
    return record ? this.get(userId, holderOf(record)) : undefined;
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

  /**
   * The conversation and its uniqueness record go in one transaction, so a
   * later create for that contact or group makes a new conversation and
   * never meets a record of a conversation that is gone. What hangs off the
   * conversation (its attachments) is removed from the table's stream
   * (functions/cleanup.ts). The token comes from the API request: the SDK's
   * retry after a lost answer is a no-op that answers success, not a 404 for
   * the request that deleted; another DELETE request is a request of its own
   * and finds nothing (404).
   */
  async remove(userId: string, id: string, requestId: string): Promise<boolean> {
    const conversation = await this.get(userId, id);
    if (!conversation) return false;
    const outcome = await transactWrite(
      this.client,
      [
        { Delete: { TableName: this.table, Key: conversationKey(userId, id), ...EXISTS } },
        {
          Delete: {
            TableName: this.table,
            Key: uniquenessKey(userId, counterpartOf(conversation)),
            ConditionExpression: '#holder = :id',
            ExpressionAttributeNames: { '#holder': 'conversation_id' },
            ExpressionAttributeValues: { ':id': id },
          },
        },
      ],
      requestToken('delete-conversation', userId, id, requestId),
    );
    if (outcome.committed) return true;
    // Another request deleted it first (or is deleting it now): this one deleted nothing.
    if (outcome.conflict) throw new ConcurrentWrite();
    return false;
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
}
