import { type DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { and, between, equals, expressions, greaterThan } from '../dynamo/expressions.js';
import { EVENT_SK_PREFIX, eventGroupPrefix, eventKey, MAX_EVENT_SEQUENCE, PARTITION_KEY, SORT_KEY, sequenceSort } from '../dynamo/keys.js';
import type { QueryCost } from '../dynamo/query-page.js';
import { eventIndexes } from '../dynamo/tables.js';
import type { Page, PageRequest } from '../pagination.js';
import { type Clock, systemClock } from '../time.js';
import { sequenceOf } from './ids.js';
import { EXPIRES_AT, storedEventOf } from './item.js';
import type { StoredEvent, TypeFilter } from './model.js';

type Item = Record<string, unknown>;

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
  async get(userId: string, id: string): Promise<StoredEvent | undefined> {
    const sequence = sequenceOf(id);
    if (sequence === undefined) return undefined;
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.table, Key: eventKey(userId, sequence), ConsistentRead: true }),
    );
    return Item && Item.id === id && live(Item, this.clock()) ? storedEventOf(Item) : undefined;
  }

  /**
   * A page newest first, as every list (shared/dynamo/query-page.ts), over
   * the sequence: the feed's own keys, or with a type filter the local index
   * of that type or resource, whose sort keys hold the same sequence. The
   * cursors bound the key condition (the cursor's event is never read). The
   * window is the Query's filter. A feed's times go forward with its
   * sequence (shared/events/outbox.ts), so reading towards older events, the
   * first one outside the window ends the feed: a page reads at most
   * limit + 1 items, filtered or not.
   */
  async list(userId: string, type: TypeFilter | undefined, page: PageRequest): Promise<{ page: Page<StoredEvent>; cost: QueryCost }> {
    const now = this.clock();
    const backwards = page.endingBefore !== undefined;
    const { low, high } = sequenceRange(page);
    const cost: QueryCost = { queries: 0, itemsRead: 0 };
    if (low > high) return { page: { has_more: false, data: [] }, cost };
    const { index, sortKey, prefix } = rangeOf(type);
    const wanted = page.limit + 1;
    const found: Item[] = [];
    let startKey: Item | undefined;
    let edge = false;
    do {
      const result = await this.client.send(
        new QueryCommand({
          TableName: this.table,
          ...(index ? { IndexName: index } : {}),
          ...expressions({
            keyCondition: and(equals(PARTITION_KEY, userId), between(sortKey, sequenceSort(prefix, low), sequenceSort(prefix, high))),
            filter: greaterThan(EXPIRES_AT, now),
          }),
          ConsistentRead: true,
          // Newest first; ending_before walks towards newer events and is turned round below.
          ScanIndexForward: backwards,
          Limit: wanted - found.length,
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      cost.queries += 1;
      cost.itemsRead += result.ScannedCount ?? 0;
      found.push(...(result.Items ?? []));
      startKey = result.LastEvaluatedKey;
      // Walking towards older events, one outside the window means every older one is too.
      edge = !backwards && (result.Count ?? 0) < (result.ScannedCount ?? 0);
    } while (found.length < wanted && startKey && !edge);

    const data = found.slice(0, page.limit).map(storedEventOf);
    if (backwards) data.reverse();
    return { page: { has_more: found.length > page.limit, data }, cost };
  }
}

/** The sequence numbers a page may hold: below starting_after, above ending_before. */
function sequenceRange(page: PageRequest): { low: number; high: number } {
  const after = page.startingAfter === undefined ? undefined : (sequenceOf(page.startingAfter) ?? 0);
  const before = page.endingBefore === undefined ? undefined : (sequenceOf(page.endingBefore) ?? 0);
  return { low: before === undefined ? 0 : before + 1, high: after === undefined ? MAX_EVENT_SEQUENCE : after - 1 };
}

/** Where a filter's events are, in sequence order: the feed itself, or the index of the type or resource. */
function rangeOf(type: TypeFilter | undefined): { index?: string; sortKey: string; prefix: string } {
  if (!type) return { sortKey: SORT_KEY, prefix: EVENT_SK_PREFIX };
  if (type.kind === 'exact')
    return { index: eventIndexes.type.name, sortKey: eventIndexes.type.sortKey, prefix: eventGroupPrefix(type.type) };
  return { index: eventIndexes.resource.name, sortKey: eventIndexes.resource.sortKey, prefix: eventGroupPrefix(type.resource) };
}

const live = (item: Item, now: number): boolean => typeof item[EXPIRES_AT] === 'number' && item[EXPIRES_AT] > now;
