import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Caller } from '../caller.js';
import { type Counterpart, conversationKey } from '../dynamo/keys.js';
import { type Clock, systemClock } from '../time.js';
import { fromItem, type Item } from './item-codec.js';
import { asMember, type MemberConversations, type ThreadSides } from './membership.js';
import type { Conversation } from './model.js';
import { holderOf, uniquenessKey } from './uniqueness.js';

/**
 * A user's conversation and their side of a thread, each one consistent read: what the store answers
 * for them, and all that attachments and upload sessions ask of the conversations, so their functions
 * bundle these reads without the store (test/infra/bundling.test.ts).
 */
export class ConversationReads implements MemberConversations, ThreadSides {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly clock: Clock = systemClock,
  ) {}

  async get(userId: string, id: string): Promise<Conversation | undefined> {
    const item = await this.item(userId, id);
    return item ? fromItem(item, this.clock()) : undefined;
  }

  /** The caller's conversation `id`: undefined when they have none, 403 not_a_member for a group's the token no longer lists. */
  async memberConversation(caller: Caller, id: string, param?: string): Promise<Conversation | undefined> {
    return asMember(caller, await this.get(caller.userId, id), param);
  }

  /** The id of the user's conversation with this contact or group (their side of its thread). */
  async sideOf(userId: string, counterpart: Counterpart): Promise<string | undefined> {
    const { Item: record } = await this.client.send(
      new GetCommand({ TableName: this.table, Key: uniquenessKey(userId, counterpart), ConsistentRead: true }),
    );
    return record ? holderOf(record) : undefined;
  }

  /** The conversation's item as stored. */
  async item(userId: string, id: string): Promise<Item | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.table, Key: conversationKey(userId, id), ConsistentRead: true }),
    );
    return Item;
  }
}
