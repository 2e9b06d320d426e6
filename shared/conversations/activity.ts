import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conversationKey } from '../dynamo/keys.js';
import { ConcurrentWrite, transactWrite, type TransactItem } from '../dynamo/transactions.js';
import { expressions } from '../dynamo/expressions.js';
import { conversationUpdate, stillThere } from './dynamo-store.js';
import { Changes, readTimes } from './item-codec.js';
import { caseHolding, readStateCases, type ReadStateCase, type ReadStateWrite } from './read-state.js';

/**
 * Activity in a conversation (a file its user added to it, or another
 * member's upload reaching it) written as one item of another write's transaction: the conversation must exist, and its
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
    write: Extract<ReadStateWrite, { kind: 'activity' | 'own-upload' }>,
  ) {
    this.cases = readStateCases(write);
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
        ...expressions({ condition: stillThere(chosen) }),
      },
    };
  }

  async caseNow(): Promise<ReadStateCase | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.table, Key: conversationKey(this.userId, this.conversationId), ConsistentRead: true }),
    );
    if (!Item) return undefined;
    return caseHolding(this.cases, readTimes(Item));
  }
}

/** Conditional writes of a file added to a conversation whose read times keep moving under it, before 503. */
const ACTIVITY_ATTEMPTS = 8;

/** What a transaction with a conversation's activity found: which of the writer's own items failed their condition, if any. */
export type ActivityOutcome = { committed: true } | { committed: false; conditionFailed: boolean[] } | 'conversation-missing';

/**
 * `items` and, when `activity` is given, the conversation's activity as the
 * last item, in one TransactWriteItems under the token `tokenOf(attempt)`
 * (the SDK's retry after a lost answer is a no-op). When only the
 * conversation's condition fails, the case that holds now is read and the
 * transaction tried again with it; a conversation that is gone is the answer
 * 'conversation-missing'. A failed condition of the writer's own items is
 * returned for the writer to read.
 */
export async function transactWithActivity(
  client: DynamoDBDocumentClient,
  items: TransactItem[],
  activity: ConversationActivity | undefined,
  tokenOf: (attempt: string) => string,
): Promise<ActivityOutcome> {
  let chosen = activity?.first;
  for (let attempt = 1; attempt <= ACTIVITY_ATTEMPTS; attempt += 1) {
    const outcome = await transactWrite(client, activity && chosen ? [...items, activity.item(chosen)] : items, tokenOf(String(attempt)));
    if (outcome.committed) return outcome;
    const own = outcome.conditionFailed.slice(0, items.length);
    if (own.includes(true)) return { committed: false, conditionFailed: own };
    if (!outcome.conditionFailed[items.length] || !activity) throw new ConcurrentWrite();
    // The conversation is gone, or its read times moved under us: the case that holds now.
    chosen = await activity.caseNow();
    if (!chosen) return 'conversation-missing';
  }
  throw new ConcurrentWrite();
}
