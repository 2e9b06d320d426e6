import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { CONTENDED, retryWhileBusy } from '../dynamo/busy-retry.js';
import { and, expressions } from '../dynamo/expressions.js';
import { conversationKey } from '../dynamo/keys.js';
import { type TransactItem, transactWrite } from '../dynamo/transactions.js';
import { type EventDraft, updatedEvents } from '../events/model.js';
import type { Outbox } from '../events/outbox.js';
import { stillThere } from './dynamo-store.js';
import { applied, Changes, fromItem, type Item, readTimes, shownAsRead } from './item-codec.js';
import { caseHolding, type ReadStateCase, type ReadStateWrite, readStateCases } from './read-state.js';

/**
 * Activity in a conversation (a file its user added to it, or another
 * member's upload reaching it) written as one item of another write's
 * transaction, recorded in the user's feed: the conversation is read, and
 * its last_active_at and unread key move as the read-state case that holds
 * for its stored times says, on the condition that it is still as read.
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

  /** The conversation as stored now (consistent), or undefined when it is gone. */
  async read(): Promise<Item | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.table, Key: conversationKey(this.userId, this.conversationId), ConsistentRead: true }),
    );
    return Item;
  }

  /**
   * The activity on the conversation as `stored`: the case that holds for
   * the stored times, on the condition that everything the conversation
   * shows is still as read (so the event's previous_attributes are true),
   * and its conversation.updated event when the conversation shows a change
   * (none for an older activity, whose item is then only a check).
   */
  recorded(stored: Item, at: number, requestId: string | null): { item: TransactItem; events: EventDraft[] } {
    const chosen = caseHolding(this.cases, readTimes(stored));
    const update = new Changes().with(this.userId, this.conversationId, chosen);
    const Key = conversationKey(this.userId, this.conversationId);
    const condition = and(stillThere(chosen), shownAsRead(stored));
    const item: TransactItem = update
      ? { Update: { TableName: this.table, Key, ...expressions({ update, condition }) } }
      : { ConditionCheck: { TableName: this.table, Key, ...expressions({ condition }) } };
    const after = update ? applied(stored, update) : stored;
    return { item, events: updatedEvents('conversation', fromItem(stored, at), fromItem(after, at), requestId) };
  }
}

/**
 * The events a write appends to its user's feed in its own transaction
 * (shared/events/outbox.ts). A conversation's activity written with it is
 * that user's own side: its change is an event of the same feed.
 */
export interface FeedWrite {
  outbox: Outbox;
  userId: string;
  events: readonly EventDraft[];
  /** The API request of the write; its events and the activity's carry it. */
  requestId: string;
  /** When the activity happened: the time its conversation is shown at. */
  at: number;
}

/** What a transaction with a conversation's activity found: which of the writer's own items failed their condition, if any. */
export type ActivityOutcome = { committed: true } | { committed: false; conditionFailed: boolean[] } | 'conversation-missing';

/**
 * `items`, the conversation's `activity` and the `feed`'s events in one transaction under a token made
 * from its items; read again and retried by the one retry policy when the conversation or the feed's
 * head moved meanwhile (docs/consistency.md, "The building blocks"). A failed condition of the
 * writer's own items is returned for the writer to read.
 */
export function transactWithActivity(
  client: DynamoDBDocumentClient,
  items: TransactItem[],
  activity: ConversationActivity | undefined,
  feed: FeedWrite,
): Promise<ActivityOutcome> {
  return retryWhileBusy(async () => {
    let changed = items;
    let events = feed.events;
    if (activity) {
      const stored = await activity.read();
      if (!stored) return 'conversation-missing' as const;
      const recorded = activity.recorded(stored, feed.at, feed.requestId);
      changed = [...items, recorded.item];
      events = [...events, ...recorded.events];
    }
    const appended = await feed.outbox.append(feed.userId, events);
    const outcome = await transactWrite(client, [...changed, ...appended.items]);
    if (outcome.committed) return outcome;
    const own = outcome.conditionFailed.slice(0, items.length);
    if (own.includes(true)) return { committed: false, conditionFailed: own };
    // The conversation changed since it was read, or another writer took the feed's sequence: read and try again.
    return CONTENDED;
  });
}
