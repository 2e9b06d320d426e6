import { type DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { InvalidParameter } from '../domain-errors.js';
import { equals, expressions, rendered } from '../dynamo/expressions.js';
import { activitySort, conversationKey, PARTITION_KEY, SORT_KEY } from '../dynamo/keys.js';
import { collectMatches, type ListQuery, pageOf, type QueryCost } from '../dynamo/query-page.js';
import { conversationIndexes } from '../dynamo/tables.js';
import type { Page, PageRequest } from '../pagination.js';
import { activityPlace, type Item } from './item-codec.js';
import { matchesFilter } from './large-sides.js';
import { type ActivityPlan, activityPlan, conjunction } from './list-plan.js';
import type { ConversationFilter } from './model.js';

/** How a list in activity order was asked for (see ListOrder). */
export interface ActivityOrder {
  pinnedFirst: boolean;
  /** The activity time of the cursor's conversation as the client holds it. */
  cursorActiveAt?: number;
}

/**
 * Conversations read apart from the list's Queries (the user's large sides, with their threads'
 * activity): each Query reads as many more, they are left out of what it read, and merged into each
 * segment where they match it.
 */
export interface ReadApart {
  /** Those that match the list's filters. */
  items: Item[];
  /** All of them, by id: a cursor among them stands where its thread's activity puts it. */
  byId: ReadonlyMap<string, Item>;
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
  apart: ReadApart = { items: [], byId: new Map() },
): Promise<{ page: Page<Item>; cost: QueryCost & { index: string } }> {
  const filters =
    order.pinnedFirst && filter.pinned === undefined
      ? [
          { ...filter, pinned: true },
          { ...filter, pinned: false },
        ]
      : [filter];
  const segments = filters.map((segmentFilter) => activityPlan(userId, segmentFilter, now));
  const cost: QueryCost = { queries: 0, itemsRead: 0 };
  const backwards = page.endingBefore !== undefined;
  const cursor = await cursorPlace(client, table, userId, page, order, segments.length > 1, cost, apart.byId);
  const wanted = page.limit + 1;
  const found: Item[] = [];
  const first = cursor?.segment ?? 0;
  for (let at = first; found.length < wanted; at += backwards ? -1 : 1) {
    const segment = segments[at];
    if (segment === undefined) break; // past either end
    const from = at === first ? cursor : undefined;
    const range = { wanted: wanted - found.length, backwards, from };
    // Those read apart are among the Query's first `wanted + their number` at most once each: left out, the rest is enough.
    const read = await segmentMatches(client, table, userId, segment, { ...range, wanted: range.wanted + apart.byId.size }, cost);
    const matches = read.filter((item) => !apart.byId.has(item.id as string)).slice(0, range.wanted);
    const segmentFilter = filters[at] ?? filter;
    found.push(
      ...mergedInOrder(
        matches,
        apart.items.filter((item) => matchesFilter(item, segmentFilter, now)),
        range,
      ),
    );
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
  apart: ReadonlyMap<string, Item>,
): Promise<CursorPlace | undefined> {
  const id = page.startingAfter ?? page.endingBefore;
  if (id === undefined) return undefined;
  if (order.cursorActiveAt !== undefined && !segmented) return { id, place: activitySort(order.cursorActiveAt, id), segment: 0 };
  const { Item: stored } = await client.send(new GetCommand({ TableName: table, Key: conversationKey(userId, id), ConsistentRead: true }));
  cost.queries += 1;
  cost.itemsRead += 1;
  // A large side stands where its thread's activity puts it, as the list showed it.
  const item = stored && (apart.get(id) ?? stored);
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

/**
 * A segment's matches from its Query merged with those read apart that are beyond `from`: the first
 * `wanted` of the union in the order they are collected in (newest activity first; `backwards`, oldest).
 */
function mergedInOrder(
  matches: Item[],
  apart: Item[],
  { wanted, backwards, from }: { wanted: number; backwards: boolean; from?: CursorPlace },
): Item[] {
  if (apart.length === 0) return matches;
  const beyond = apart.filter(
    (item) => from === undefined || (backwards ? activityPlace(item) > from.place : activityPlace(item) < from.place),
  );
  const direction = backwards ? 1 : -1;
  return [...matches, ...beyond].sort((a, b) => (activityPlace(a) < activityPlace(b) ? -direction : direction)).slice(0, wanted);
}

/** Every match of a Query whose set is small by nature, all pages of it. */
export async function wholeSet(client: DynamoDBDocumentClient, query: ListQuery, cost: QueryCost): Promise<Item[]> {
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
