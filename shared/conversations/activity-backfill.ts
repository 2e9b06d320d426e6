import { type DynamoDBDocumentClient, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unlessConditionFails } from '../dynamo/errors.js';
import { and, beginsWith, equals, expressions, hasType, itemExists, notExists, or } from '../dynamo/expressions.js';
import { CONVERSATION_SK_PREFIX, conversationKey, SORT_KEY } from '../dynamo/keys.js';
import { conversationIndexes } from '../dynamo/tables.js';
import { activityPlace, type Item } from './item-codec.js';

const PLACE = conversationIndexes.activity.sortKey;

/**
 * Gives every conversation written before the activity order its place
 * (activity_sort), so that it appears in `order=activity`: a Scan of the
 * conversations that lack it, and one conditional update each, on the
 * condition that it still lacks it and its last_active_at is still as read
 * (an activity that came between wrote the place itself). Run once after the
 * indexes exist (docs/deploying.md); running it again finds nothing to do.
 * Not a function of the API: no function may Scan.
 */
export async function backfillActivityPlaces(client: DynamoDBDocumentClient, table: string): Promise<{ scanned: number; written: number }> {
  let startKey: Record<string, unknown> | undefined;
  let scanned = 0;
  let written = 0;
  do {
    const page = await client.send(
      new ScanCommand({
        TableName: table,
        ...expressions({ filter: and(beginsWith(SORT_KEY, CONVERSATION_SK_PREFIX), notExists(PLACE)) }),
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    scanned += page.ScannedCount ?? 0;
    for (const item of page.Items ?? []) if (await place(client, table, item)) written += 1;
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return { scanned, written };
}

async function place(client: DynamoDBDocumentClient, table: string, item: Item): Promise<boolean> {
  const activeAsRead =
    typeof item.last_active_at === 'number'
      ? equals('last_active_at', item.last_active_at)
      : or(notExists('last_active_at'), hasType('last_active_at', 'NULL'));
  const written = await unlessConditionFails(
    client.send(
      new UpdateCommand({
        TableName: table,
        Key: conversationKey(item.pk as string, item.sk as string),
        ...expressions({ update: { set: { [PLACE]: activityPlace(item) } }, condition: and(itemExists(), notExists(PLACE), activeAsRead) }),
      }),
    ),
  );
  return written !== undefined;
}
