import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { batchGetAll } from '../dynamo/batch-get.js';
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
  /** The settling sweep finished too: no side by_thread had not shown at the switch is left unmarked. */
  settled: boolean;
  /** The ids of the switching batch's changes it passed over (ThreadFeeds.passOver): what a side the switch missed is owed. */
  switchChanges: string[];
  /** The latest upload into the thread since it became large. */
  lastActiveAt: number | null;
}

const LARGE_SINCE = 'large_since';
const SWEPT = 'swept';
const SETTLED = 'settled';
const SWITCH_CHANGES = 'switch_changes';
const LAST_ACTIVE_AT = 'last_active_at';
const GROUP_ID = 'group_id';
/** The attribute that puts a side in by_large_side. */
export const LARGE_SIDE_KEY = conversationIndexes.large.partitionKey;

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
    const keys = [...new Set(groupIds)].map(groupThreadKey);
    const found = new Map<string, number | null>();
    for (const item of await batchGetAll(this.client, this.table, keys, { projection: [GROUP_ID, LARGE_SINCE, LAST_ACTIVE_AT] })) {
      const thread = threadOf(item);
      if (thread.large) found.set(item[GROUP_ID] as string, thread.lastActiveAt);
    }
    return found;
  }

  /**
   * Makes the thread large, for good, at the activity `at` (the switching
   * batch's latest upload), with the ids of the changes it passed over (at
   * most a stream batch's: a few KB); a thread already large stays as it is.
   */
  async becomeLarge(groupId: string, at: number | undefined, now: number, switchChanges: readonly string[]): Promise<void> {
    const set = {
      [GROUP_ID]: groupId,
      [LARGE_SINCE]: now,
      [SWITCH_CHANGES]: [...switchChanges],
      ...(at === undefined ? {} : { [LAST_ACTIVE_AT]: at }),
    };
    await this.updateUnlessFailed(groupThreadKey(groupId), set, notExists(LARGE_SINCE));
  }

  /** Records that every side the switch found carries LARGE_SIDE_KEY, at `now`. */
  async swept(groupId: string, now: number): Promise<void> {
    await this.setOnThread(groupId, { [SWEPT]: now });
  }

  /** Records that the settling sweep found every side marked (it found the ones by_thread had not shown at the switch). */
  async settled(groupId: string): Promise<void> {
    await this.setOnThread(groupId, { [SETTLED]: true });
  }

  private async setOnThread(groupId: string, set: Record<string, unknown>): Promise<void> {
    await this.client.send(new UpdateCommand({ TableName: this.table, Key: groupThreadKey(groupId), ...expressions({ update: { set } }) }));
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

/**
 * How long by_thread may lag a side's creation (on AWS a GSI is eventually
 * consistent, normally well under a second): a side made just before the
 * switch may be missing from its sweep, so the switch's settling timer comes
 * this long after it and sweeps again.
 */
export const INDEX_SETTLE_SECONDS = 10;

const notLarge = (): Condition => notExists(LARGE_SINCE);
export const isLarge = (): Condition => exists(LARGE_SINCE);

function threadOf(item: Record<string, unknown> | undefined): GroupThread {
  const swept = item?.[SWEPT];
  const switchChanges = item?.[SWITCH_CHANGES];
  return {
    large: typeof item?.[LARGE_SINCE] === 'number',
    // `true`: a switch swept before its time was recorded.
    swept: swept === true || typeof swept === 'number',
    settled: item?.[SETTLED] === true,
    // None on a thread switched before they were recorded.
    switchChanges: Array.isArray(switchChanges) ? switchChanges.filter((id): id is string => typeof id === 'string') : [],
    lastActiveAt: typeof item?.[LAST_ACTIVE_AT] === 'number' ? (item[LAST_ACTIVE_AT] as number) : null,
  };
}
