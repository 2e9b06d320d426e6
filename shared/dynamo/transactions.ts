import { createHash } from 'node:crypto';
import { type DynamoDBDocumentClient, TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { busyOf, cancellationCodes, retryWhileBusy } from './busy-retry.js';

export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** A ClientRequestToken (at most 36 characters) naming `parts`. */
export function requestToken(...parts: string[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 36);
}

/**
 * The ClientRequestToken of every transaction, made from its items (never the request id, which sam
 * local repeats), so the SDK's resend after a lost answer is a no-op and two different writes never
 * share one (docs/consistency.md, "The building blocks").
 */
export const contentToken = (items: TransactItem[]): string => requestToken(JSON.stringify(items));

/** Committed, or cancelled because conditions failed: which items failed theirs (by position). */
export type Outcome = { committed: true } | { committed: false; conditionFailed: boolean[] };

/**
 * One TransactWriteItems, idempotent under `token` (by default its items'
 * token, contentToken; a test may name another). A transaction cancelled
 * because conditions failed is an answer. One cancelled because another
 * transaction held its items, or for throttling, wrote nothing and is sent
 * again with the same token (the request is the same) by the one retry
 * policy (busy-retry.ts), within the time budget. Any other error is thrown.
 */
export async function transactWrite(
  client: DynamoDBDocumentClient,
  items: TransactItem[],
  token: string = contentToken(items),
): Promise<Outcome> {
  try {
    return await retryWhileBusy(() => attemptTransaction(client, items, token));
  } catch (error) {
    // An earlier resend under this token may have committed: no caller may retry with other items as if nothing had.
    throw busyOf(error) ? new TransactionUnsettled(error) : error;
  }
}

/** A transaction still throttled when its retries ended: it may have committed (its answer lost), so it is not busy (503). */
export class TransactionUnsettled extends Error {
  override readonly name = 'TransactionUnsettled';
  constructor(cause: unknown) {
    super('The table stayed throttled; whether this transaction committed is unknown', { cause });
  }
}

async function attemptTransaction(client: DynamoDBDocumentClient, items: TransactItem[], token: string): Promise<Outcome> {
  try {
    await client.send(new TransactWriteCommand({ TransactItems: items, ClientRequestToken: token }));
    return { committed: true };
  } catch (error) {
    const codes = cancellationCodes(error);
    const conditionFailed = items.map((_, index) => codes?.[index] === 'ConditionalCheckFailed');
    if (conditionFailed.includes(true)) return { committed: false, conditionFailed };
    // Busy (conflict, throttling) is retried by the policy; anything else is thrown as it is.
    throw error;
  }
}
