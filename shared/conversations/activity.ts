import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conversationKey } from '../dynamo/keys.js';
import type { TransactItem } from '../dynamo/transactions.js';
import { conversationUpdate } from './dynamo-store.js';
import { Changes, readTimes } from './item-codec.js';
import { readStateCases, type ReadStateCase } from './read-state.js';

/**
 * Activity in a conversation (a file added to it) written as one item of
 * another write's transaction: the conversation must exist, and its
 * last_active_at and unread key move as the read-state case that holds for
 * its stored times says. The writer tries `first`; when the conversation's
 * condition fails, `caseNow` reads it and gives the case that holds now, or
 * undefined when the conversation is gone. A read only chooses which
 * conditional write to try next, as in DynamoConversationStore.write.
 */
export class ConversationActivity {
  private readonly cases: ReadStateCase[];

  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly userId: string,
    private readonly conversationId: string,
    at: number,
  ) {
    this.cases = readStateCases({ kind: 'activity', at });
  }

  get first(): ReadStateCase {
    return this.cases[0]!;
  }

  /** The transaction item of `chosen`: an update, or only a check when the case moves nothing (an older activity). */
  item(chosen: ReadStateCase): TransactItem {
    const update = conversationUpdate(this.table, this.userId, this.conversationId, new Changes(), chosen);
    if (update) return { Update: update };
    return {
      ConditionCheck: {
        TableName: this.table,
        Key: conversationKey(this.userId, this.conversationId),
        ConditionExpression: `attribute_exists(#pk) AND ${chosen.condition}`,
        ExpressionAttributeNames: { '#pk': 'pk', ...chosen.names },
        ...(Object.keys(chosen.values).length > 0 ? { ExpressionAttributeValues: chosen.values } : {}),
      },
    };
  }

  async caseNow(): Promise<ReadStateCase | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.table, Key: conversationKey(this.userId, this.conversationId), ConsistentRead: true }),
    );
    if (!Item) return undefined;
    const stored = readTimes(Item);
    const chosen = this.cases.find((candidate) => candidate.holds(stored));
    // The cases cover every state (unit-tested): without one the write would drop the read state.
    if (!chosen) throw new Error(`No read-state case holds for ${JSON.stringify(stored)}`);
    return chosen;
  }
}
