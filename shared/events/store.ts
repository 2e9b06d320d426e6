import { GetCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { and, beginsWith, equals, expressions, greaterThan } from '../dynamo/expressions.js';
import { EVENT_SK_PREFIX, eventKey, PARTITION_KEY, SORT_KEY } from '../dynamo/keys.js';
import type { QueryCost } from '../dynamo/query-page.js';
import type { Page, PageRequest } from '../pagination.js';
import { systemClock, type Clock } from '../time.js';
import { sequenceOf } from './ids.js';
import { eventOf, EXPIRES_AT } from './item.js';
import { matchesType, type ApiEvent, type TypeFilter } from './model.js';

type Item = Record<string, unknown>;

/** Reads beyond this per Query are not worth it even when few events match the type. */
const MAX_READ_AHEAD = 1_000;

/**
 * A user's feed as the API reads it: consistent reads (a sync must see every
 * event committed before it asked), and only events inside the retention
 * window, whatever DynamoDB's TTL has not deleted yet.
 */
export class EventStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly clock: Clock = systemClock,
  ) {}

  /** One GetItem at the sequence the id names; the stored id must be this very id (another user's names a sequence of ours). */
  async get(userId: string, id: string): Promise<ApiEvent | undefined> {
    const sequence = sequenceOf(id);
    if (sequence === undefined) return undefined;
    const { Item } = await this.client.send(new GetCommand({ TableName: this.table, Key: eventKey(userId, sequence), ConsistentRead: true }));
    return Item && Item.id === id && live(Item, this.clock()) ? eventOf(Item) : undefined;
  }

  /**
   * A page newest first, as every list (shared/dynamo/query-page.ts), over
   * the sequence: the cursor's key is built from its id, never read. The
   * window is the Query's filter. A feed's times go forward with its
   * sequence (shared/events/outbox.ts), so reading towards older events, the
   * first one outside the window ends the feed: with no type filter a page
   * reads at most limit + 1 items. The type filter reads ahead in proportion
   * to its match rate so far, as a list's filter does.
   */
  async list(userId: string, type: TypeFilter | undefined, page: PageRequest): Promise<{ page: Page<ApiEvent>; cost: QueryCost }> {
    const now = this.clock();
    const cursor = page.startingAfter ?? page.endingBefore;
    const backwards = page.endingBefore !== undefined;
    const wanted = page.limit + 1;
    const found: Item[] = [];
    const cost: QueryCost = { queries: 0, itemsRead: 0 };
    let startKey: Item | undefined = cursor === undefined ? undefined : { ...eventKey(userId, sequenceOf(cursor) ?? 0) };
    let batch = wanted;
    let edge = false;
    do {
      const result = await this.client.send(
        new QueryCommand({
          TableName: this.table,
          ...expressions({
            keyCondition: and(equals(PARTITION_KEY, userId), beginsWith(SORT_KEY, EVENT_SK_PREFIX)),
            filter: greaterThan(EXPIRES_AT, now),
          }),
          ConsistentRead: true,
          // Newest first; ending_before walks towards newer events and is turned round below.
          ScanIndexForward: backwards,
          Limit: batch,
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      cost.queries += 1;
      cost.itemsRead += result.ScannedCount ?? 0;
      found.push(...(result.Items ?? []).filter((item) => matchesType(type, item.type as string)));
      startKey = result.LastEvaluatedKey;
      // Walking towards older events, one outside the window means every older one is too.
      edge = !backwards && (result.Count ?? 0) < (result.ScannedCount ?? 0);
      const needed = wanted - found.length;
      batch = type ? Math.min(MAX_READ_AHEAD, needed * Math.ceil(cost.itemsRead / Math.max(1, found.length))) : needed;
    } while (found.length < wanted && startKey && !edge);

    const data = found.slice(0, page.limit).map(eventOf);
    if (backwards) data.reverse();
    return { page: { has_more: found.length > page.limit, data }, cost };
  }
}

const live = (item: Item, now: number): boolean => typeof item[EXPIRES_AT] === 'number' && item[EXPIRES_AT] > now;
