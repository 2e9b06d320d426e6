import { type AttributeValue, DeleteItemCommand, DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import type { TableDefinition } from '../../shared/dynamo/tables.js';
import { logger } from '../../shared/observability.js';
import { startStreamPoller } from './stream-poller.js';

export interface TimeToLiveOptions {
  endpoint: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** The table whose expired items go: its definition names the attribute and the stream the items are learnt from. */
  table: { name: string; definition: TableDefinition };
  /** How often expired items are looked for (default 1 s). */
  sweepEveryMs?: number;
  /**
   * How long after its expiry an item is deleted (default 0: at the next sweep). DynamoDB deletes
   * within days, and until then reads and queries return the item: the tests' servers wait long.
   */
  delayMs?: number;
  /** The stream poller's function timeout (nothing to enforce here: the handler only notes items). */
  functionTimeoutMs: number;
}

type Key = Record<string, AttributeValue>;

/**
 * What DynamoDB's Time to Live does for the stack, for one table of the local
 * server: DynamoDB Local does not run TTL ("TTL is currently not supported",
 * AWS's usage notes). An item whose TTL attribute is a number of epoch
 * seconds is deleted once that time has passed, on the condition that the
 * attribute still holds it, so its REMOVE reaches the table's stream (and
 * the cleanup) as TTL's own deletion does. AWS deletes within a few days of
 * the expiry; this `delayMs` after it (npm start: at the next sweep, which TTL
 * allows; the tests' servers: an hour, so that a read that forgets to leave
 * expired items out is caught).
 *
 * Items are learnt from the table's stream (INSERT, MODIFY, from the oldest
 * record kept), and once at start by a Scan for what the stream no longer holds;
 * no periodic Scan, so a table of many other items costs nothing. A failed
 * deletion is tried again at the next sweep.
 */
export function startTimeToLive(options: TimeToLiveOptions): { stop(): Promise<void> } {
  const { definition, name } = options.table;
  const { timeToLiveAttribute, stream } = definition;
  if (!timeToLiveAttribute || !stream) throw new Error(`table ${name} has no TTL attribute or no stream to learn its items from`);
  const attribute: string = timeToLiveAttribute;
  const dynamodb = new DynamoDBClient({ endpoint: options.endpoint, region: options.region, credentials: options.credentials });
  /** Items with an expiry, by their key's JSON: the key and the expiry seen. */
  const expiring = new Map<string, { key: Key; expiresAt: string }>();
  const keyOf = (item: Key): Key => ({
    [definition.partitionKey]: keyAttribute(item, definition.partitionKey),
    [definition.sortKey]: keyAttribute(item, definition.sortKey),
  });
  const note = (item: Key | undefined) => {
    const expiresAt = item?.[attribute]?.N;
    if (item && expiresAt !== undefined) expiring.set(JSON.stringify(keyOf(item)), { key: keyOf(item), expiresAt });
  };

  const poller = startStreamPoller({
    endpoint: options.endpoint,
    region: options.region,
    credentials: options.credentials,
    tables: [{ name, stream }],
    filter: { eventName: ['INSERT', 'MODIFY'] },
    handler: async (event: DynamoDBStreamEvent) => {
      for (const record of event.Records) note(record.dynamodb?.NewImage as Key | undefined);
    },
    functionTimeoutMs: options.functionTimeoutMs,
  });

  async function scanOnce(): Promise<void> {
    let start: Key | undefined;
    do {
      const page = await dynamodb.send(
        new ScanCommand({
          TableName: name,
          FilterExpression: 'attribute_exists(#ttl)',
          ExpressionAttributeNames: { '#ttl': attribute },
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) note(item);
      start = page.LastEvaluatedKey;
    } while (start);
  }

  async function sweep(): Promise<void> {
    const now = (Date.now() - (options.delayMs ?? 0)) / 1000;
    for (const [id, { key, expiresAt }] of expiring) {
      if (Number(expiresAt) > now) continue;
      try {
        await dynamodb.send(
          new DeleteItemCommand({
            TableName: name,
            Key: key,
            ConditionExpression: '#ttl = :seen',
            ExpressionAttributeNames: { '#ttl': attribute },
            ExpressionAttributeValues: { ':seen': { N: expiresAt } },
          }),
        );
        expiring.delete(id);
      } catch (error) {
        // Gone already, or given another expiry (its MODIFY notes that one): nothing to do for this one.
        if ((error as Error).name === 'ConditionalCheckFailedException') expiring.delete(id);
        // Anything else (DynamoDB unreachable): the next sweep tries again.
      }
    }
  }

  let running = true;
  let scanned = false;
  let timer: NodeJS.Timeout | undefined;
  let sweeping: Promise<void> = Promise.resolve();
  const tick = () => {
    sweeping = (async () => {
      try {
        if (!scanned) {
          await scanOnce();
          scanned = true;
        }
        await sweep();
      } catch (error) {
        logger.debug('time to live sweep failed; trying again', { table: name, error });
      }
      if (running) timer = setTimeout(tick, options.sweepEveryMs ?? 1_000);
    })();
  };
  tick();

  return {
    async stop() {
      running = false;
      clearTimeout(timer);
      await sweeping;
      await poller.stop();
      dynamodb.destroy();
    },
  };
}

/** A key attribute of a stream record's item: every item of the table has it, so its absence is a broken record. */
function keyAttribute(item: Key, name: string): AttributeValue {
  const value = item[name];
  if (!value) throw new Error(`a stream record's item has no key attribute ${name}`);
  return value;
}
