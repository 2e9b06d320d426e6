import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { counterpartOf, type Item, toItem } from '../shared/conversations/item-codec.js';
import type { Conversation } from '../shared/conversations/model.js';
import { uniquenessItem } from '../shared/conversations/uniqueness.js';
import { BATCH_WRITE_MAX, batchWriteAll } from './batch-write.js';

/**
 * Writes many conversations of one user at once, each with its uniqueness
 * record, exactly as the store writes them (same codec): the seeding path of
 * the bench and of tests that need thousands of conversations. Not for the
 * API: it checks for nothing, and the API never calls BatchWriteItem.
 */
export async function putConversations(
  client: DynamoDBDocumentClient,
  table: string,
  userId: string,
  conversations: readonly Conversation[],
  parallelBatches = 8,
): Promise<void> {
  const items = conversations.flatMap((conversation) => [
    toItem(userId, conversation),
    uniquenessItem(userId, counterpartOf(conversation), conversation.id),
  ]);
  await putItems(client, table, items, parallelBatches);
}

/** Items as a store writes them, BatchWriteItem of 25 at a time, `parallelBatches` in flight. */
export async function putItems(client: DynamoDBDocumentClient, table: string, items: readonly Item[], parallelBatches = 8): Promise<void> {
  const batches: Item[][] = [];
  for (let start = 0; start < items.length; start += BATCH_WRITE_MAX) batches.push(items.slice(start, start + BATCH_WRITE_MAX));
  const writeBatch = (batch: Item[]) =>
    batchWriteAll(
      client,
      table,
      batch.map((Item) => ({ PutRequest: { Item } })),
    );
  let next = 0;
  const worker = async () => {
    while (next < batches.length) await writeBatch(batches[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(parallelBatches, batches.length) }, worker));
}
