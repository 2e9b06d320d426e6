import { type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { batchGetAll } from '../dynamo/batch-get.js';
import { expressions, itemAbsent } from '../dynamo/expressions.js';
import { deliveredChangeKey, SORT_KEY, threadFeedKey } from '../dynamo/keys.js';
import { type TransactItem, transactWrite } from '../dynamo/transactions.js';
import { EXPIRES_AT } from '../events/item.js';
import { EVENT_RETENTION_SECONDS } from '../events/model.js';
import { type Outbox, withFeed } from '../events/outbox.js';
import type { ScanSettings } from '../scanning/model.js';
import type { Clock } from '../time.js';
import { memberEvents, showsAnything, type ThreadChange } from './fan-out.js';

/** Marks a change's record in the thread feed as the switch's: delivered to each side, not an event of the feed. */
const PASSED_OVER = 'passed_over';
/** The passed-over change itself, for a side the switch missed (a few KB: an attachment's record, twice for a rename). */
const CHANGE = 'change';

/** Changes per transaction: each is its event (two for none) and its delivered record, under DynamoDB's 100 items with the head. */
const CHANGES_PER_WRITE = 40;

/**
 * A large group's thread feed (docs/api.md, "Sharing", large groups): one
 * event per change of the thread, numbered by the fan-out after the change
 * committed, so uploads never contend for it. Each write records the changes
 * it holds (`r#<stream record id>` on `attribute_not_exists`, as a member's
 * delivery does), so a batch delivered again adds nothing. The events name no
 * side (`conversation_id` null): each reader's is put in as it reads.
 */
export class ThreadFeedWriter {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly eventsTable: string,
    private readonly outbox: Outbox,
    private readonly clock: Clock,
    private readonly scanning: Pick<ScanSettings, 'serveUnscannable'>,
  ) {}

  async record(groupId: string, changes: readonly ThreadChange[]): Promise<void> {
    const shown = changes.filter((change) => showsAnything(change, this.scanning));
    for (let start = 0; start < shown.length; start += CHANGES_PER_WRITE)
      await this.recordPart(groupId, shown.slice(start, start + CHANGES_PER_WRITE));
  }

  /**
   * One PutItem per change that shows anything: its record, marked passed
   * over and holding the change, whatever is there (a record is the same
   * however often written). The ids of those written.
   */
  async passOver(groupId: string, changes: readonly ThreadChange[]): Promise<string[]> {
    const feed = threadFeedKey(groupId);
    const shown = changes.filter((change) => showsAnything(change, this.scanning));
    await Promise.all(
      shown.map((change) =>
        this.client.send(
          new PutCommand({
            TableName: this.eventsTable,
            Item: { ...this.deliveredItem(feed, change.id), [PASSED_OVER]: true, [CHANGE]: change },
          }),
        ),
      ),
    );
    return shown.map((change) => change.id);
  }

  /** The changes of these ids a switch passed over, in their order, read back consistently (one BatchGetItem per 100). */
  async passedOver(groupId: string, ids: readonly string[]): Promise<ThreadChange[]> {
    const feed = threadFeedKey(groupId);
    const keys = ids.map((id) => deliveredChangeKey(feed, id));
    const records = await batchGetAll(this.client, this.eventsTable, keys, {
      projection: [SORT_KEY, PASSED_OVER, CHANGE],
      consistent: true,
    });
    const bySortKey = new Map(
      records.filter((item) => item[PASSED_OVER] === true && item[CHANGE]).map((item) => [item[SORT_KEY], item[CHANGE]]),
    );
    return keys.flatMap((key) => {
      const change = bySortKey.get(key.sk);
      return change ? [change as ThreadChange] : [];
    });
  }

  private deliveredItem(feed: string, changeId: string): Record<string, unknown> {
    return { ...deliveredChangeKey(feed, changeId), [EXPIRES_AT]: this.clock() + EVENT_RETENTION_SECONDS };
  }

  private async recordPart(groupId: string, changes: ThreadChange[]): Promise<void> {
    const recorded = new Set<string>();
    const feed = threadFeedKey(groupId);
    await withFeed(async (retry) => {
      const pending = changes.filter((change) => !recorded.has(change.id));
      if (pending.length === 0) return true;
      const marks = pending.map(
        (change): TransactItem => ({
          Put: {
            TableName: this.eventsTable,
            Item: this.deliveredItem(feed, change.id),
            ...expressions({ condition: itemAbsent() }),
          },
        }),
      );
      const appended = await this.outbox.appendToThread(
        groupId,
        pending.flatMap((change) => memberEvents(change, null, this.scanning)),
      );
      const outcome = await transactWrite(this.client, [...marks, ...appended.items]);
      if (outcome.committed) return true;
      // Changes an earlier delivery recorded: left out. The head moved (another batch of the thread): read again.
      for (const [index, change] of pending.entries()) if (outcome.conditionFailed[index]) recorded.add(change.id);
      return retry;
    });
  }
}
