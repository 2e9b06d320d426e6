import { BatchGetCommand, type BatchGetCommandOutput, type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unlessConditionFails } from '../dynamo/errors.js';
import { type Condition, exists, expressions, itemExists, lessThan, notExists, or } from '../dynamo/expressions.js';
import { conversationKey, groupThreadKey, type ItemKey, largeSideKey } from '../dynamo/keys.js';
import { conversationIndexes } from '../dynamo/tables.js';
import type { TransactItem } from '../dynamo/transactions.js';

/** A group's thread as its record holds it: large or not, and a large one's activity. */
export interface GroupThread {
  large: boolean;
  /** Every side was marked large (the switch's sweep finished). */
  swept: boolean;
  /** The latest upload into the thread since it became large. */
  lastActiveAt: number | null;
}

const LARGE_SINCE = 'large_since';
const SWEPT = 'swept';
const LAST_ACTIVE_AT = 'last_active_at';
const GROUP_ID = 'group_id';
/** The attribute that puts a side in by_large_side. */
export const LARGE_SIDE_KEY = conversationIndexes.large.partitionKey;
/** DynamoDB's most keys in one BatchGetItem. */
const BATCH_GET_MAX = 100;

/**
 * Large groups (docs/api.md, "Sharing", large groups; docs/decisions.md): a
 * group's thread record says whether the thread is large, once and for good,
 * and holds the activity that an upload into a large thread writes once,
 * where a small thread's fan-out writes every side. Each side of a large
 * group carries LARGE_SIDE_KEY, so a user's large sides are one Query.
 */
export class LargeThreads {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  /** The thread's record, read consistently; a thread without one is small. */
  async thread(groupId: string): Promise<GroupThread> {
    const { Item } = await this.client.send(new GetCommand({ TableName: this.table, Key: groupThreadKey(groupId), ConsistentRead: true }));
    return threadOf(Item);
  }

  /** The large threads' activity among these groups: one BatchGetItem per 100 (eventually consistent, as every list). */
  async activityOf(groupIds: readonly string[]): Promise<Map<string, number | null>> {
    const found = new Map<string, number | null>();
    const unique = [...new Set(groupIds)];
    for (let start = 0; start < unique.length; start += BATCH_GET_MAX) {
      let keys: Record<string, unknown>[] | undefined = unique.slice(start, start + BATCH_GET_MAX).map((id) => ({ ...groupThreadKey(id) }));
      // Keys DynamoDB leaves unprocessed (throttling) are asked for again: a list must not drop a thread.
      while (keys && keys.length > 0) {
        const { Responses, UnprocessedKeys }: BatchGetCommandOutput = await this.client.send(
          new BatchGetCommand({
            RequestItems: { [this.table]: { Keys: keys, ...expressions({ projection: [GROUP_ID, LARGE_SINCE, LAST_ACTIVE_AT] }) } },
          }),
        );
        for (const item of Responses?.[this.table] ?? []) {
          const thread = threadOf(item);
          if (thread.large) found.set(item[GROUP_ID] as string, thread.lastActiveAt);
        }
        keys = UnprocessedKeys?.[this.table]?.Keys;
      }
    }
    return found;
  }

  /** Makes the thread large, for good, at the activity `at` (the switching batch's latest upload); a thread already large stays as it is. */
  async becomeLarge(groupId: string, at: number | undefined, now: number): Promise<void> {
    const set = { [GROUP_ID]: groupId, [LARGE_SINCE]: now, ...(at === undefined ? {} : { [LAST_ACTIVE_AT]: at }) };
    await this.updateUnlessFailed(groupThreadKey(groupId), set, notExists(LARGE_SINCE));
  }

  /** Records that every side the switch found carries LARGE_SIDE_KEY. */
  async swept(groupId: string): Promise<void> {
    await this.client.send(
      new UpdateCommand({ TableName: this.table, Key: groupThreadKey(groupId), ...expressions({ update: { set: { [SWEPT]: true } } }) }),
    );
  }

  /** Moves a large thread's activity forward to `at`: one write per upload batch, whatever the member count. */
  async moveActivity(groupId: string, at: number): Promise<void> {
    await this.updateUnlessFailed(
      groupThreadKey(groupId),
      { [LAST_ACTIVE_AT]: at },
      or(notExists(LAST_ACTIVE_AT), lessThan(LAST_ACTIVE_AT, at)),
    );
  }

  /** Marks a side as a large group's, if it is still there. */
  async markSide(userId: string, conversationId: string): Promise<void> {
    await this.updateUnlessFailed(conversationKey(userId, conversationId), { [LARGE_SIDE_KEY]: largeSideKey(userId) }, itemExists());
  }

  /** One conditional UpdateItem; a condition that fails means it is done already (each of these only moves one way). */
  private async updateUnlessFailed(key: ItemKey, set: Record<string, unknown>, condition: Condition): Promise<void> {
    await unlessConditionFails(
      this.client.send(new UpdateCommand({ TableName: this.table, Key: key, ...expressions({ update: { set }, condition }) })),
    );
  }

  /**
   * What a new side's creation adds to its transaction: a check that the
   * thread is still as read (small: not large yet), so a side made while the
   * thread switches is either marked here or found by the switch's sweep.
   */
  stillSmall(groupId: string): TransactItem {
    return { ConditionCheck: { TableName: this.table, Key: groupThreadKey(groupId), ...expressions({ condition: notLarge() }) } };
  }
}

const notLarge = (): Condition => notExists(LARGE_SINCE);
export const isLarge = (): Condition => exists(LARGE_SINCE);

function threadOf(item: Record<string, unknown> | undefined): GroupThread {
  return {
    large: typeof item?.[LARGE_SINCE] === 'number',
    swept: item?.[SWEPT] === true,
    lastActiveAt: typeof item?.[LAST_ACTIVE_AT] === 'number' ? (item[LAST_ACTIVE_AT] as number) : null,
  };
}
