import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { isConditionFailed, unlessConditionFails } from '../dynamo/errors.js';
import { and, atMost, equals, expressions, ifNotExists, itemAbsent, lessThan, or } from '../dynamo/expressions.js';
import { idempotencyKey } from '../dynamo/keys.js';
import type { ApiResponse } from '../http/response.js';
import { type Claim, type ClaimOutcome, IDEMPOTENCY_TTL_SECONDS, type IdempotencyRecord, type IdempotencyStore } from './model.js';

type Item = Record<string, unknown>;

const seconds = (ms: number) => Math.floor(ms / 1000);

/** The key is still this run's: a run whose lease was taken over must leave it alone. */
const ownedBy = (claim: Claim) => equals('owner', claim.owner);

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
   * One conditional update elects the single run of a key: it takes a key
   * that is new, released, or whose run's lease ran out, for the same request
   * only, and keeps the key's seed (see ClaimOutcome). The claim carries this
   * run's token (owner): when the SDK resends a claim whose answer was lost,
   * its condition fails against the claim it made itself, and DynamoDB
   * returns that item (ReturnValuesOnConditionCheckFailure): the run sees its
   * own token and knows the key is its own, instead of taking its own claim
   * for another run's (which would answer 409 until the lease ended).
   */
  async claim(claim: Claim): Promise<ClaimOutcome> {
    for (;;) {
      try {
        const { Attributes } = await this.client.send(
          new UpdateCommand({
            TableName: this.table,
            Key: idempotencyKey(claim.userId, claim.key),
            ...expressions({
              update: {
                set: {
                  state: 'in_progress',
                  fingerprint: claim.fingerprint,
                  owner: claim.owner,
                  lease_until_ms: claim.nowMs + claim.leaseMs,
                  expires_at: ifNotExists(seconds(claim.nowMs) + IDEMPOTENCY_TTL_SECONDS),
                  seed: ifNotExists(claim.seed),
                },
              },
              condition: or(
                itemAbsent(),
                and(
                  equals('fingerprint', claim.fingerprint),
                  or(equals('state', 'released'), and(equals('state', 'in_progress'), lessThan('lease_until_ms', claim.nowMs))),
                ),
              ),
            }),
            ReturnValues: 'ALL_NEW',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        const seed = Attributes?.seed;
        if (typeof seed !== 'string') throw new Error('DynamoDB answered the idempotency claim without its seed (ReturnValues ALL_NEW)');
        return { claimed: true, seed };
      } catch (error) {
        if (!isConditionFailed(error)) throw error;
        const mine = heldBy(error, claim.owner);
        if (mine) return { claimed: true, seed: mine };
      }
      const holder = await this.get(claim.userId, claim.key, claim.nowMs);
      if (holder) return { claimed: false, holder };
      // Expired (24 hours on): a new key from here on, with a new seed; or gone since our write: try again.
      await this.removeExpired(claim.userId, claim.key, claim.nowMs);
    }
  }

  private async removeExpired(userId: string, key: string, nowMs: number): Promise<void> {
    await unlessConditionFails(
      this.client.send(
        new DeleteCommand({
          TableName: this.table,
          Key: idempotencyKey(userId, key),
          ...expressions({ condition: atMost('expires_at', seconds(nowMs)) }),
        }),
      ),
    );
  }

  async get(userId: string, key: string, nowMs: number): Promise<IdempotencyRecord | undefined> {
    const { Item: item } = await this.client.send(
      new GetCommand({ TableName: this.table, Key: idempotencyKey(userId, key), ConsistentRead: true }),
    );
    if (!item || (item.expires_at as number) <= seconds(nowMs)) return undefined;
    return toRecord(item);
  }

  /** The response, kept until the key's expiry (24 hours from its first request). */
  async complete(claim: Claim, response: ApiResponse): Promise<void> {
    await this.ifStillOwned(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.table,
          Key: idempotencyKey(claim.userId, claim.key),
          ...expressions({
            // JSON text: stored exactly as sent, whatever DynamoDB thinks of empty strings or nulls.
            update: { set: { state: 'completed', response: JSON.stringify(response) }, remove: ['lease_until_ms'] },
            condition: ownedBy(claim),
          }),
        }),
      ),
    );
  }

  /** Released, not deleted: the key keeps its fingerprint, expiry and seed for the next run. */
  async release(claim: Claim): Promise<void> {
    await this.ifStillOwned(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.table,
          Key: idempotencyKey(claim.userId, claim.key),
          ...expressions({ update: { set: { state: 'released' }, remove: ['owner', 'lease_until_ms'] }, condition: ownedBy(claim) }),
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
  if (item.state === 'released') return { state: 'released', fingerprint: item.fingerprint as string };
  return {
    state: 'in_progress',
    fingerprint: item.fingerprint as string,
    owner: item.owner as string,
    leaseUntilMs: item.lease_until_ms as number,
  };
}

/** The seed of the item a failed condition met, when that item is this run's own claim (the raw item DynamoDB returns with the failure). */
function heldBy(error: unknown, owner: string): string | undefined {
  const item = (error as { Item?: { owner?: { S?: string }; seed?: { S?: string } } }).Item;
  return item?.owner?.S === owner ? item.seed?.S : undefined;
}
