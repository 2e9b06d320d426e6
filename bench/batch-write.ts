import { setTimeout as sleep } from 'node:timers/promises';
import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** DynamoDB's most requests in one BatchWriteItem. */
export const BATCH_WRITE_MAX = 25;

type Item = Record<string, unknown>;

export type WriteRequest = { PutRequest: { Item: Item } } | { DeleteRequest: { Key: Item } };

/**
 * One BatchWriteItem of at most BATCH_WRITE_MAX requests to one table,
 * resending what DynamoDB left unprocessed (throttling) with a growing pause
 * until nothing is left. The writes must be idempotent (plain puts and
 * deletes are).
 */
export async function batchWriteAll(client: DynamoDBDocumentClient, table: string, batch: readonly WriteRequest[]): Promise<void> {
  let requests = [...batch];
  for (let attempt = 0; requests.length > 0; attempt += 1) {
    if (attempt > 0) await sleep(Math.min(1_000, 2 ** attempt * 25));
    const { UnprocessedItems } = await client.send(new BatchWriteCommand({ RequestItems: { [table]: requests } }));
    requests = (UnprocessedItems?.[table] ?? []) as WriteRequest[];
  }
}
