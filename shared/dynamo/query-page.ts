import { type DynamoDBDocumentClient, QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import type { Page, PageRequest } from '../pagination.js';
import { type Condition, equals, expressions } from './expressions.js';
import { type ItemKey, PARTITION_KEY, SORT_KEY } from './keys.js';
import type { IndexDefinition } from './tables.js';

type Item = Record<string, unknown>;

/** A list's Query without its paging: table, index, key condition, optional filter. */
export type ListQuery = Omit<QueryCommandInput, 'Limit' | 'ExclusiveStartKey' | 'ScanIndexForward'>;

export interface QueryCost {
  queries: number;
  itemsRead: number;
}

/** Reads beyond this per Query are not worth it even when few items match. */
const MAX_READ_AHEAD = 1_000;

/**
 * One page of a Stripe-style list over a sort key that is the object id in
 * creation order. The cursor becomes an ExclusiveStartKey without a read (so
 * it works after its object is deleted); exactly `limit + 1` matches are
 * collected, the extra one only telling whether there are more. Without a
 * filter that is `limit + 1` items read; with one, the reads go on (ahead in
 * proportion to the match rate so far) until the page is full or the data ends.
 */
export async function queryPage(
  client: DynamoDBDocumentClient,
  query: ListQuery,
  page: PageRequest,
  startKeyOf: (cursorId: string) => Item,
): Promise<{ page: Page<Item>; cost: QueryCost }> {
  const cursor = page.startingAfter ?? page.endingBefore;
  const backwards = page.endingBefore !== undefined;
  const cost: QueryCost = { queries: 0, itemsRead: 0 };
  const found = await collectMatches(
    client,
    query,
    { wanted: page.limit + 1, backwards, ...(cursor === undefined ? {} : { startKey: startKeyOf(cursor) }) },
    cost,
  );
  return { page: pageOf(found, page.limit, backwards), cost };
}

/** The page of `limit` out of the matches collected (one more only tells that there are more), in list order. */
export function pageOf(found: Item[], limit: number, backwards: boolean): Page<Item> {
  const data = found.slice(0, limit);
  if (backwards) data.reverse();
  return { has_more: found.length > limit, data };
}

/**
 * Up to `wanted` matches of one Query, newest first (or, `backwards`, from
 * `startKey` towards newer ones), read after `startKey`; the reads are added
 * to `cost`. Without a filter that is `wanted` items read; with one, the reads
 * go on (ahead in proportion to the match rate so far) until enough match or
 * the data ends.
 */
export async function collectMatches(
  client: DynamoDBDocumentClient,
  query: ListQuery,
  { wanted, backwards, startKey: from }: { wanted: number; backwards: boolean; startKey?: Item },
  cost: QueryCost,
): Promise<Item[]> {
  const found: Item[] = [];
  const start = { queries: cost.queries, itemsRead: cost.itemsRead };
  let startKey = from;
  let batch = wanted;
  while (found.length < wanted) {
    const result = await client.send(
      new QueryCommand({
        ...query,
        // Newest first; ending_before walks towards newer objects and is turned round by pageOf.
        ScanIndexForward: backwards,
        Limit: batch,
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    cost.queries += 1;
    cost.itemsRead += result.ScannedCount ?? 0;
    found.push(...(result.Items ?? []));
    startKey = result.LastEvaluatedKey;
    if (!startKey) break;
    const needed = wanted - found.length;
    const read = cost.itemsRead - start.itemsRead;
    batch = query.FilterExpression ? Math.min(MAX_READ_AHEAD, needed * Math.ceil(read / Math.max(1, found.length))) : needed;
  }
  return found.slice(0, wanted);
}

/**
 * The table keys of every item under one partition of an index, a page at a
 * time: for work over all of them (a thread's sides, a side's uploads), not
 * for a list a client pages through. `filter` leaves out the items it fails
 * (read, not returned).
 */
export async function* keysUnder(
  client: DynamoDBDocumentClient,
  table: string,
  index: IndexDefinition,
  partition: string,
  filter?: Condition,
): AsyncGenerator<ItemKey[]> {
  let startKey: Item | undefined;
  do {
    const page = await client.send(
      new QueryCommand({
        TableName: table,
        IndexName: index.name,
        ...expressions({ keyCondition: equals(index.partitionKey, partition), filter, projection: [PARTITION_KEY, SORT_KEY] }),
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    yield (page.Items ?? []).map((item) => ({ [PARTITION_KEY]: item[PARTITION_KEY] as string, [SORT_KEY]: item[SORT_KEY] as string }));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
}
