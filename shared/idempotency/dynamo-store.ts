import { DeleteCommand, GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionFailed, unlessConditionFails } from '../dynamo/errors.js';
import type { ApiResponse } from '../http/response.js';
import { idempotencyKey } from '../dynamo/keys.js';
import { IDEMPOTENCY_TTL_SECONDS, type Claim, type IdempotencyRecord, type IdempotencyStore } from './model.js';

type Item = Record<string, unknown>;

const seconds = (ms: number) => Math.floor(ms / 1000);

/**
 * Idempotency records in DynamoDB. DynamoDB's TTL deletes expired records
 * eventually (up to days late, and DynamoDB Local never does), so every read
 * and the claim's condition also treat `expires_at` in the past as no record.
 */
export class DynamoIdempotencyStore implements IdempotencyStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  /**
   * One conditional put elects the single run of a key. The claim carries
   * this run's token (owner): when the SDK resends a claim whose answer was
   * lost, its condition fails against the claim it made itself, and DynamoDB
   * returns that item (ReturnValuesOnConditionCheckFailure): the run sees its
   * own token and knows the key is its own, instead of taking its own claim
   * for another run's (which would answer 409 until the lease ended).
   */
  async claim(claim: Claim): Promise<IdempotencyRecord | undefined> {
    for (;;) {
      try {
        await this.client.send(
          new PutCommand({
            TableName: this.table,
            Item: {
              ...idempotencyKey(claim.userId, claim.key),
              state: 'in_progress',
              fingerprint: claim.fingerprint,
              owner: claim.owner,
              lease_until_ms: claim.nowMs + claim.leaseMs,
              expires_at: seconds(claim.nowMs) + IDEMPOTENCY_TTL_SECONDS,
            },
            ConditionExpression: 'attribute_not_exists(#pk) OR #expires <= :now OR (#state = :in_progress AND #lease < :now_ms)',
            ExpressionAttributeNames: { '#pk': 'pk', '#expires': 'expires_at', '#state': 'state', '#lease': 'lease_until_ms' },
            ExpressionAttributeValues: { ':now': seconds(claim.nowMs), ':now_ms': claim.nowMs, ':in_progress': 'in_progress' },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        return undefined;
      } catch (error) {
        if (!isConditionFailed(error)) throw error;
        if (ownerOf(error) === claim.owner) return undefined;
      }
      const holder = await this.get(claim.userId, claim.key, claim.nowMs);
      // Gone between our put and our read (released or expired): try again.
      if (holder) return holder;
    }
  }

  async get(userId: string, key: string, nowMs: number): Promise<IdempotencyRecord | undefined> {
    const { Item: item } = await this.client.send(
      new GetCommand({ TableName: this.table, Key: idempotencyKey(userId, key), ConsistentRead: true }),
    );
    if (!item || (item.expires_at as number) <= seconds(nowMs)) return undefined;
    return toRecord(item);
  }

  async complete(claim: Claim, response: ApiResponse): Promise<void> {
    await this.ifStillOwned(() =>
      this.client.send(
        new PutCommand({
          TableName: this.table,
          Item: {
            ...idempotencyKey(claim.userId, claim.key),
            state: 'completed',
            fingerprint: claim.fingerprint,
            // JSON text: stored exactly as sent, whatever DynamoDB thinks of empty strings or nulls.
            response: JSON.stringify(response),
            // 24 hours from the first request.
            expires_at: seconds(claim.nowMs) + IDEMPOTENCY_TTL_SECONDS,
          },
          ConditionExpression: '#owner = :owner',
          ExpressionAttributeNames: { '#owner': 'owner' },
          ExpressionAttributeValues: { ':owner': claim.owner },
        }),
      ),
    );
  }

  async release(claim: Claim): Promise<void> {
    await this.ifStillOwned(() =>
      this.client.send(
        new DeleteCommand({
          TableName: this.table,
          Key: idempotencyKey(claim.userId, claim.key),
          ConditionExpression: '#owner = :owner',
          ExpressionAttributeNames: { '#owner': 'owner' },
          ExpressionAttributeValues: { ':owner': claim.owner },
        }),
      ),
    );
  }

  /** A run whose lease was taken over no longer owns the key and must leave it alone. */
  private async ifStillOwned(write: () => Promise<unknown>): Promise<void> {
    await unlessConditionFails(write());
  }
}

function toRecord(item: Item): IdempotencyRecord {
  if (item.state === 'completed') {
    return { state: 'completed', fingerprint: item.fingerprint as string, response: JSON.parse(item.response as string) };
  }
  return {
    state: 'in_progress',
    fingerprint: item.fingerprint as string,
    owner: item.owner as string,
    leaseUntilMs: item.lease_until_ms as number,
  };
}

/** The owner of the item a failed condition met (the raw item DynamoDB returns with the failure). */
function ownerOf(error: unknown): string | undefined {
  return (error as { Item?: { owner?: { S?: string } } }).Item?.owner?.S;
}
