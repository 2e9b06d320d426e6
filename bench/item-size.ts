/**
 * What AWS bills a transaction's writes by: 2 write request units per item
 * per KB of the item (rounded up per item), from the items as the request
 * sends them (DynamoDB's wire format). DynamoDB Local's ConsumedCapacity
 * for a transaction does not add its items up: three 100-byte Puts into one
 * table in one transaction are reported as 2 units, where AWS bills 6.
 */

/** An attribute value as DynamoDB's JSON protocol sends it. */
export type WireValue = {
  S?: string;
  N?: string;
  B?: string;
  BOOL?: boolean;
  NULL?: boolean;
  M?: WireItem;
  L?: WireValue[];
  SS?: string[];
  NS?: string[];
  BS?: string[];
};
export type WireItem = Record<string, WireValue>;

const utf8 = (text: string) => Buffer.byteLength(text, 'utf8');

/** A number: about one byte per two significant digits, plus one (leading and trailing zeros do not count). */
function numberBytes(text: string): number {
  const digits = text.replace(/^-/, '').replace(/e.*$/i, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

/** DynamoDB's size of a value (its attribute's name not included). */
export function valueBytes(value: WireValue): number {
  if (value.S !== undefined) return utf8(value.S);
  if (value.N !== undefined) return numberBytes(value.N);
  if (value.B !== undefined) return Buffer.from(value.B, 'base64').length;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.SS) return value.SS.reduce((sum, member) => sum + utf8(member), 0);
  if (value.NS) return value.NS.reduce((sum, member) => sum + numberBytes(member), 0);
  if (value.BS) return value.BS.reduce((sum, member) => sum + Buffer.from(member, 'base64').length, 0);
  // A map or list: 3 bytes, and 1 byte per element beside the elements themselves.
  if (value.M) return 3 + Object.entries(value.M).reduce((sum, [name, member]) => sum + utf8(name) + valueBytes(member) + 1, 0);
  if (value.L) return 3 + value.L.reduce((sum, member) => sum + valueBytes(member) + 1, 0);
  throw new Error(`Unknown attribute value ${JSON.stringify(value)}`);
}

/** An item's size: the names and values of its attributes. */
export const itemBytes = (item: WireItem): number =>
  Object.entries(item).reduce((sum, [name, value]) => sum + utf8(name) + valueBytes(value), 0);

/** Write request units of one item written in a transaction. */
export const transactionalWriteUnits = (bytes: number): number => 2 * Math.max(1, Math.ceil(bytes / 1024));

interface WireTransactItem {
  Put?: { TableName: string; Item: WireItem };
  Update?: { TableName: string; Key: WireItem; ExpressionAttributeNames?: Record<string, string>; ExpressionAttributeValues?: WireItem };
  Delete?: { TableName: string; Key: WireItem };
  ConditionCheck?: { TableName: string; Key: WireItem };
}

/**
 * The write units a TransactWriteItems request (its JSON body) costs in
 * `table`: a Put by its item, and again for each index of `indexSortKeys`
 * the item has a sort key of (a local index projecting ALL holds the whole
 * item; counted at the transactional rate, the upper bound of what AWS
 * bills for an index write in a transaction); an Update by its key and
 * every name and value it names (at least the item it leaves when it sets
 * every attribute, as a feed's head update does). The outbox neither
 * deletes nor checks items of the feed: a Delete or ConditionCheck there is
 * refused, not guessed at.
 */
export function transactionWriteUnits(body: string, table: string, indexSortKeys: readonly string[] = []): number {
  const { TransactItems } = JSON.parse(body) as { TransactItems: WireTransactItem[] };
  let units = 0;
  for (const item of TransactItems) {
    if (item.Put?.TableName === table) {
      const indexed = indexSortKeys.filter((sortKey) => sortKey in item.Put!.Item).length;
      units += (1 + indexed) * transactionalWriteUnits(itemBytes(item.Put.Item));
    }
    if (item.Update?.TableName === table) {
      const { Key, ExpressionAttributeNames = {}, ExpressionAttributeValues = {} } = item.Update;
      const names = Object.values(ExpressionAttributeNames).reduce((sum, name) => sum + utf8(name), 0);
      const values = Object.values(ExpressionAttributeValues).reduce((sum, value) => sum + valueBytes(value), 0);
      units += transactionalWriteUnits(itemBytes(Key) + names + values);
    }
    if ((item.Delete ?? item.ConditionCheck)?.TableName === table)
      throw new Error(`No rule here for a Delete or ConditionCheck in ${table}: add it to bench/item-size.ts`);
  }
  return units;
}

/** A stored item as the document client reads it: strings, numbers and booleans, as a conversation holds. */
export type PlainItem = Record<string, unknown>;

function plainValueBytes(value: unknown): number {
  if (typeof value === 'string') return utf8(value);
  if (typeof value === 'number') return numberBytes(String(value));
  if (typeof value === 'boolean' || value === null) return 1;
  throw new Error(`No size rule here for ${JSON.stringify(value)}: add it to bench/item-size.ts`);
}

export const plainItemBytes = (item: PlainItem): number =>
  Object.entries(item).reduce((sum, [name, value]) => sum + utf8(name) + plainValueBytes(value), 0);

/**
 * The write units of one transactional update of an item from `before` to
 * `after`, the table's and its global indexes': the table item at the larger
 * of its two sizes; each index (projecting ALL) that holds the item before or
 * after writes it once, or twice (a delete and a put) when its key moves or it
 * enters or leaves the index, each at the transactional rate (the upper bound,
 * as above). An item holds an index when it has both its key attributes.
 */
export function updateWriteUnits(
  before: PlainItem,
  after: PlainItem,
  indexes: readonly { partitionKey: string; sortKey: string }[],
): number {
  const units = (item: PlainItem) => transactionalWriteUnits(plainItemBytes(item));
  let total = Math.max(units(before), units(after));
  for (const { partitionKey, sortKey } of indexes) {
    const held = (item: PlainItem) => item[partitionKey] !== undefined && item[sortKey] !== undefined;
    const keyOf = (item: PlainItem) => `${String(item[partitionKey])}\u0000${String(item[sortKey])}`;
    if (held(before) && held(after)) total += keyOf(before) === keyOf(after) ? units(after) : units(before) + units(after);
    else if (held(before)) total += units(before);
    else if (held(after)) total += units(after);
  }
  return total;
}
