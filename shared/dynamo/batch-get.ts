import { BatchGetCommand, type BatchGetCommandOutput, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { expressions } from './expressions.js';
import type { ItemKey } from './keys.js';

/** DynamoDB's most keys in one BatchGetItem. */
const BATCH_GET_MAX = 100;

/**
 * The items of these keys that exist, with the attributes `projection`
 * names: one BatchGetItem per 100 keys, and the keys DynamoDB leaves
 * unprocessed (throttling) asked for again, so that no item is dropped.
 */
export async function batchGetAll(
  client: DynamoDBDocumentClient,
  table: string,
  keys: readonly ItemKey[],
  { projection, consistent = false }: { projection: readonly string[]; consistent?: boolean },
): Promise<Record<string, unknown>[]> {
  const found: Record<string, unknown>[] = [];
  for (let start = 0; start < keys.length; start += BATCH_GET_MAX) {
    let pending: Record<string, unknown>[] | undefined = keys.slice(start, start + BATCH_GET_MAX).map((key) => ({ ...key }));
    while (pending && pending.length > 0) {
      const { Responses, UnprocessedKeys }: BatchGetCommandOutput = await client.send(
        new BatchGetCommand({
          RequestItems: { [table]: { Keys: pending, ...(consistent ? { ConsistentRead: true } : {}), ...expressions({ projection }) } },
        }),
      );
      found.push(...(Responses?.[table] ?? []));
      pending = UnprocessedKeys?.[table]?.Keys;
    }
  }
  return found;
}
