import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { CONTENDED, retryWhileBusy } from '../dynamo/busy-retry.js';
import { equals, expressions, itemAbsent } from '../dynamo/expressions.js';
import { feedHeadKey } from '../dynamo/keys.js';
import type { Outcome, TransactItem } from '../dynamo/transactions.js';
import { type Clock, systemClock } from '../time.js';
import { eventId } from './ids.js';
import { eventItem, type FeedOwner, feedKeyOf } from './item.js';
import type { ApiEvent, EventDraft } from './model.js';

/** The head's attributes: the last sequence number taken, and the created_at of that event. */
const SEQUENCE = 'seq';
const LAST_AT = 'at';

/**
 * A user's events as items of the transaction of the change they record (a
 * transactional outbox): they exist if and only if the change committed.
 * `items` are the head's conditional update first, then one Put per event.
 */
export interface FeedAppend {
  items: TransactItem[];
}

/**
 * Appends events to users' feeds inside the transactions of their changes.
 * Each event takes the user's next sequence number, and the head that
 * counts them moves on the condition that it still holds the number read:
 * so the sequence is taken at commit, and a feed read in sequence order
 * only ever grows at its head (docs/decisions.md, "Events").
 */
export class Outbox {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * The items that append `drafts` to the user's feed, for one attempt of a
   * transaction: one consistent read of the head. None for no drafts. When
   * the transaction is cancelled on the head alone (`headTaken`), another
   * writer took the sequence first: append again and retry. `group`: the
   * group whose members alone may read these events (StoredEvent), for what
   * another member's change of a group's thread brings the user.
   */
  append(userId: string, drafts: readonly EventDraft[], group: string | null = null): Promise<FeedAppend> {
    return this.appendTo({ user: userId, group }, drafts);
  }

  /** The same for a large group's thread feed (its own partition, the group beside each event). */
  appendToThread(groupId: string, drafts: readonly EventDraft[]): Promise<FeedAppend> {
    return this.appendTo({ thread: groupId }, drafts);
  }

  private async appendTo(owner: FeedOwner, drafts: readonly EventDraft[]): Promise<FeedAppend> {
    if (drafts.length === 0) return { items: [] };
    const feed = feedKeyOf(owner);
    const { Item: head } = await this.client.send(new GetCommand({ TableName: this.table, Key: feedHeadKey(feed), ConsistentRead: true }));
    const last = typeof head?.[SEQUENCE] === 'number' ? head[SEQUENCE] : 0;
    // Never before the event behind it: a feed's times go forward with its sequence, so the retention's edge is one place in it.
    const createdAt = Math.max(this.clock(), typeof head?.[LAST_AT] === 'number' ? head[LAST_AT] : 0);
    const events = drafts.map(
      (draft, index): ApiEvent => ({
        id: eventId(last + 1 + index),
        type: draft.type,
        created_at: createdAt,
        data: draft.data,
        request_id: draft.request_id,
      }),
    );
    const moveHead: TransactItem = {
      Update: {
        TableName: this.table,
        Key: feedHeadKey(feed),
        ...expressions({
          update: { set: { [SEQUENCE]: last + drafts.length, [LAST_AT]: createdAt } },
          condition: head ? equals(SEQUENCE, last) : itemAbsent(),
        }),
      },
    };
    const puts = events.map(
      (event, index): TransactItem => ({
        Put: {
          TableName: this.table,
          Item: eventItem(owner, last + 1 + index, event),
          ...expressions({ condition: itemAbsent() }),
        },
      }),
    );
    return { items: [moveHead, ...puts] };
  }
}

/**
 * Whether a cancelled transaction whose feed items start at `offset` failed
 * on a feed's head while the change's own items (before `offset`) held:
 * another writer took a sequence number first, and the change is tried again.
 */
export function headTaken(outcome: Outcome, offset: number): boolean {
  if (outcome.committed) return false;
  const own = outcome.conditionFailed.slice(0, offset);
  return !own.includes(true) && outcome.conditionFailed.slice(offset).includes(true);
}

/**
 * A change written with its events: `attempt` appends, sends its transaction
 * (its token made from its items: contentToken) and answers, or answers
 * `retry` (CONTENDED) when another writer took the sequence (headTaken), to
 * be read and appended again after a pause, by the one retry policy
 * (shared/dynamo/busy-retry.ts): a busy feed is never an outage.
 */
export function withFeed<T>(attempt: (retry: typeof CONTENDED) => Promise<T | typeof CONTENDED>): Promise<T> {
  return retryWhileBusy(() => attempt(CONTENDED));
}
