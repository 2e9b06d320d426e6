import { type DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { InvalidParameter } from '../domain-errors.js';
import { equals, expressions, rendered } from '../dynamo/expressions.js';
import { activitySort, conversationKey, PARTITION_KEY, SORT_KEY } from '../dynamo/keys.js';
import { collectMatches, type ListQuery, pageOf, type QueryCost } from '../dynamo/query-page.js';
import { conversationIndexes } from '../dynamo/tables.js';
import type { Page, PageRequest } from '../pagination.js';
import { activityPlace, type Item } from './item-codec.js';
import { type ActivityPlan, activityPlan, conjunction } from './list-plan.js';
import type { ConversationFilter } from './model.js';

/** How a list in activity order was asked for (see ListOrder). */
export interface ActivityOrder {
  pinnedFirst: boolean;
  /** The activity time of the cursor's conversation as the client holds it. */
  cursorActiveAt?: number;
}

/**
 * A page of the user's conversations in activity order (with `pinnedFirst`, two segments), starting
 * at the place the client saw its cursor at (docs/decisions.md, "Activity order").
 */
export async function activityPage(
  client: DynamoDBDocumentClient,
  table: string,
  userId: string,
  filter: ConversationFilter,
  page: PageRequest,
  order: ActivityOrder,
  now: number,
): Promise<{ page: Page<Item>; cost: QueryCost & { index: string } }> {
  const segments =
    order.pinnedFirst && filter.pinned === undefined
      ? [activityPlan(userId, { ...filter, pinned: true }, now), activityPlan(userId, { ...filter, pinned: false }, now)]
      : [activityPlan(userId, filter, now)];
  const cost: QueryCost = { queries: 0, itemsRead: 0 };
  const backwards = page.endingBefore !== undefined;
  const cursor = await cursorPlace(client, table, userId, page, order, segments.length > 1, cost);
  const wanted = page.limit + 1;
  const found: Item[] = [];
  const first = cursor?.segment ?? 0;
  for (let at = first; found.length < wanted; at += backwards ? -1 : 1) {
    const segment = segments[at];
    if (segment === undefined) break; // past either end
    const from = at === first ? cursor : undefined;
    found.push(...(await segmentMatches(client, table, userId, segment, { wanted: wanted - found.length, backwards, from }, cost)));
  }
  return { page: pageOf(found, page.limit, backwards), cost: { ...cost, index: segments.map((segment) => segment.index.name).join('+') } };
}

interface CursorPlace {
  id: string;
  /** activitySort of the place. */
  place: string;
  /** Which segment it is in (with pinned first: 0 pinned, 1 the rest). */
  segment: number;
}

async function cursorPlace(
  client: DynamoDBDocumentClient,
  table: string,
  userId: string,
  page: PageRequest,
  order: ActivityOrder,
  segmented: boolean,
  cost: QueryCost,
): Promise<CursorPlace | undefined> {
  const id = page.startingAfter ?? page.endingBefore;
  if (id === undefined) return undefined;
  if (order.cursorActiveAt !== undefined && !segmented) return { id, place: activitySort(order.cursorActiveAt, id), segment: 0 };
  const { Item: item } = await client.send(new GetCommand({ TableName: table, Key: conversationKey(userId, id), ConsistentRead: true }));
  cost.queries += 1;
  cost.itemsRead += 1;
  if (!item) {
    const param = page.startingAfter === undefined ? 'ending_before' : 'starting_after';
    throw new InvalidParameter(
      param,
      segmented
        ? `${param} names no conversation of yours: with pinned_first, page on from a conversation that is still there`
        : `${param} names no conversation of yours: give cursor_active_at, its activity time as you hold it`,
    );
  }
  const place = order.cursorActiveAt !== undefined ? activitySort(order.cursorActiveAt, id) : activityPlace(item);
  return { id, place, segment: segmented && item.is_pinned !== true ? 1 : 0 };
}

/** Up to `wanted` matches of one segment after (`backwards`: before) `from`, in the order they are collected in. */
async function segmentMatches(
  client: DynamoDBDocumentClient,
  table: string,
  userId: string,
  plan: ActivityPlan,
  { wanted, backwards, from }: { wanted: number; backwards: boolean; from?: CursorPlace },
  cost: QueryCost,
): Promise<Item[]> {
  const { index } = plan;
  const filter = conjunction(plan.residual);
  const query: ListQuery = {
    TableName: table,
    IndexName: index.name,
    ...expressions({ keyCondition: equals(index.partitionKey, index.value), ...(filter ? { filter: rendered(filter) } : {}) }),
  };
  if (plan.kind === 'ordered') {
    const startKey = from && {
      [PARTITION_KEY]: userId,
      [SORT_KEY]: from.id,
      [index.partitionKey]: index.value,
      [conversationIndexes.activity.sortKey]: from.place,
    };
    return collectMatches(client, query, { wanted, backwards, ...(startKey ? { startKey } : {}) }, cost);
  }
  const newestFirst = (await wholeSet(client, query, cost))
    .map((item) => ({ item, place: activityPlace(item) }))
    .sort((a, b) => (a.place < b.place ? 1 : -1));
  const inOrder = backwards ? newestFirst.reverse() : newestFirst;
  const after = from ? inOrder.filter(({ place }) => (backwards ? place > from.place : place < from.place)) : inOrder;
  return after.slice(0, wanted).map(({ item }) => item);
}

/** Every match of a Query whose set is small by nature, all pages of it. */
async function wholeSet(client: DynamoDBDocumentClient, query: ListQuery, cost: QueryCost): Promise<Item[]> {
  const items: Item[] = [];
  let startKey: Item | undefined;
  do {
    const result = await client.send(new QueryCommand({ ...query, ...(startKey ? { ExclusiveStartKey: startKey } : {}) }));
    cost.queries += 1;
    cost.itemsRead += result.ScannedCount ?? 0;
    items.push(...(result.Items ?? []));
    startKey = result.LastEvaluatedKey;
  } while (startKey);
  return items;
}
