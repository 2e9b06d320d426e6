import { type DynamoDBDocumentClient, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unlessConditionFails } from '../dynamo/errors.js';
import { and, atMost, equals, expressions, rendered } from '../dynamo/expressions.js';
import { conversationKey, muteEndKey, muteEndSort } from '../dynamo/keys.js';
import type { QueryCost } from '../dynamo/query-page.js';
import { conversationIndexes } from '../dynamo/tables.js';
import { logger } from '../observability.js';
import type { Page, PageRequest } from '../pagination.js';
import { Changes, type Item } from './item-codec.js';
import type { Condition } from './list-plan.js';

/**
 * Timed mutes whose end has passed but which are still stored as mutes (so
 * still under `true` in by_muted). Nothing is written when a mute ends; the
 * muted lists find these with one key condition on by_mute_end ("end <= now"),
 * merge them into `muted=false`, and write them back as no mute afterwards, so
 * that each is read only until the next muted list.
 */
const WRITE_BACKS_IN_PARALLEL = 10;

/**
 * The user's ended mutes that also pass `filter` (the list's other filters).
 * Read whole: a `muted=false` page must merge all of them to be exact; there
 * are only those that ended since the last muted list wrote them back.
 */
export async function endedMutes(
  client: DynamoDBDocumentClient,
  table: string,
  userId: string,
  now: number,
  filter: Condition | undefined,
): Promise<{ items: Item[]; cost: QueryCost }> {
  const { muteEnd } = conversationIndexes;
  const items: Item[] = [];
  const cost: QueryCost = { queries: 0, itemsRead: 0 };
  let startKey: Item | undefined;
  do {
    const result = await client.send(
      new QueryCommand({
        TableName: table,
        IndexName: muteEnd.name,
        ...expressions({
          keyCondition: and(equals(muteEnd.partitionKey, muteEndKey(userId)), atMost(muteEnd.sortKey, muteEndSort(now))),
          ...(filter ? { filter: rendered(filter) } : {}),
        }),
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    cost.queries += 1;
    cost.itemsRead += result.ScannedCount ?? 0;
    items.push(...(result.Items ?? []));
    startKey = result.LastEvaluatedKey;
  } while (startKey);
  return { items, cost };
}

/**
 * Writes ended mutes back as no mute, each only if it still has the end that
 * was read (a user who muted again meanwhile keeps the new mute). Nothing a
 * response shows depends on it; a failure is logged and left for the next list.
 */
export async function writeBackEndedMutes(client: DynamoDBDocumentClient, table: string, userId: string, items: Item[]): Promise<void> {
  const unmute = Changes.of(userId, { mute: { kind: 'off' } });
  const writeBack = async (item: Item) => {
    // Turning a mute off always writes its attributes: never undefined.
    const update = unmute.with(userId, item.id as string);
    if (!update) return;
    try {
      await unlessConditionFails(
        client.send(
          new UpdateCommand({
            TableName: table,
            Key: conversationKey(userId, item.id as string),
            ...expressions({ update, condition: equals('muted_until', item.muted_until) }),
          }),
        ),
      );
    } catch (error) {
      logger.warn('Could not write back an ended mute', { error });
    }
  };
  for (let start = 0; start < items.length; start += WRITE_BACKS_IN_PARALLEL) {
    await Promise.all(items.slice(start, start + WRITE_BACKS_IN_PARALLEL).map(writeBack));
  }
}

/**
 * A page in creation order merged with other matches read apart (all of them beyond the cursor, so the merge
 * is exact): a `muted=false` page with the ended mutes, a page with the user's large sides. The first `limit`
 * of the union in list order; `has_more` when either side has more. An item on both sides (written back between
 * the two reads) counts once.
 */
export function mergeIntoPage(main: Page<Item>, ended: Item[], page: PageRequest): Page<Item> {
  const backwards = page.endingBefore !== undefined;
  const cursor = page.startingAfter ?? page.endingBefore;
  const beyondCursor = (id: string) => cursor === undefined || (backwards ? id > cursor : id < cursor);
  const byId = new Map<string, Item>();
  for (const item of [...main.data, ...ended.filter((item) => beyondCursor(item.id as string))]) byId.set(item.id as string, item);
  // Nearest the cursor first: newest first forwards, oldest first backwards.
  const ordered = [...byId.values()].sort((a, b) => ((a.id as string) < (b.id as string) ? 1 : -1) * (backwards ? -1 : 1));
  const data = ordered.slice(0, page.limit);
  if (backwards) data.reverse();
  return { has_more: main.has_more || ordered.length > page.limit, data };
}
