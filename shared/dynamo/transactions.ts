import { setTimeout as sleep } from 'node:timers/promises';
import { createHash } from 'node:crypto';
import { TransactWriteCommand, type DynamoDBDocumentClient, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';

export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/**
 * A ClientRequestToken from what a write is about (user, operation, ids): the
 * SDK resends the very same token when it retries a transaction whose answer
 * was lost, and DynamoDB then answers success without running it again
 * (tokens are remembered for 10 minutes). At most 36 characters.
 */
export function requestToken(...parts: string[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 36);
}

/**
 * A ClientRequestToken for a write that a later run of the same work may
 * build again (a stream batch delivered twice): made from the items
 * themselves, so one token always names one transaction and DynamoDB never
 * meets it with other items (IdempotentParameterMismatch).
 */
export const contentToken = (items: TransactItem[]): string => requestToken(JSON.stringify(items));

/**
 * Committed, or cancelled: which items failed their condition (by position),
 * or whether another transaction was writing the same items at that moment
 * (a conflict: nothing was written, and trying again is safe).
 */
export type Outcome = { committed: true } | { committed: false; conditionFailed: boolean[]; conflict: boolean };

/**
 * One TransactWriteItems, idempotent under `token`. A transaction cancelled
 * because conditions failed or because of a conflict is an answer; any other
 * error (unreachable, throttled) is thrown.
 */
export async function transactWrite(client: DynamoDBDocumentClient, items: TransactItem[], token: string): Promise<Outcome> {
  for (let attempt = 1; ; attempt += 1) {
    const outcome = await attemptTransaction(client, items, token);
    // A conflict wrote nothing: try again shortly (with the same token: the request is the same), a few times;
    // still conflicting, it is the answer (503, retryable).
    if (outcome.committed || !outcome.conflict || outcome.conditionFailed.includes(true) || attempt >= CONFLICT_ATTEMPTS) return outcome;
    await sleep(Math.random() * 25 * 2 ** attempt);
  }
}

/** Transactions that met another one on the same items are sent again this often before the conflict is the answer. */
const CONFLICT_ATTEMPTS = 5;

async function attemptTransaction(client: DynamoDBDocumentClient, items: TransactItem[], token: string): Promise<Outcome> {
  try {
    await client.send(new TransactWriteCommand({ TransactItems: items, ClientRequestToken: token }));
    return { committed: true };
  } catch (error) {
    const reasons = cancellationReasons(error);
    const codes = items.map((_, index) => reasons?.[index]?.Code);
    const conditionFailed = codes.map((code) => code === 'ConditionalCheckFailed');
    const conflict = codes.includes('TransactionConflict');
    if (reasons && (conditionFailed.includes(true) || conflict)) return { committed: false, conditionFailed, conflict };
    throw error;
  }
}

function cancellationReasons(error: unknown): { Code?: string }[] | undefined {
  if (!(error instanceof Error) || error.name !== 'TransactionCanceledException') return undefined;
  return (error as Error & { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
}

/** Another request was writing the same items at the same moment: nothing was written; the client may retry (503). */
export class ConcurrentWrite extends Error {
  override name = 'TransactionConflictException';
}
