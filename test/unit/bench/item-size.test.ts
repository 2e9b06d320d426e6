import { describe, expect, it } from 'vitest';
import { itemBytes, transactionalWriteUnits, transactionWriteUnits, valueBytes } from '../../../bench/item-size.js';

describe('item sizes as DynamoDB counts them', () => {
  it('counts attribute names and string values in UTF-8 bytes', () => {
    expect(itemBytes({ pk: { S: 'user' }, é: { S: 'ü' } })).toBe(2 + 4 + 2 + 2);
  });

  it('counts a number by its significant digits, two to a byte, plus one', () => {
    expect(valueBytes({ N: '7' })).toBe(2);
    expect(valueBytes({ N: '1764000000' })).toBe(3);
    expect(valueBytes({ N: '1764012345' })).toBe(6);
    expect(valueBytes({ N: '-0.0012' })).toBe(2);
  });

  it('counts maps and lists with their overhead', () => {
    expect(valueBytes({ M: { a: { S: 'xy' } } })).toBe(3 + 1 + 2 + 1);
    expect(valueBytes({ L: [{ BOOL: true }, { NULL: true }] })).toBe(3 + 2 + 2);
  });
});

describe('write units of a transaction', () => {
  it('bills 2 units per item per started KB', () => {
    expect(transactionalWriteUnits(1)).toBe(2);
    expect(transactionalWriteUnits(1024)).toBe(2);
    expect(transactionalWriteUnits(1025)).toBe(4);
  });

  const body = (items: unknown[]) => JSON.stringify({ TransactItems: items });

  it("adds up the table's items, each rounded on its own, and leaves other tables out", () => {
    const put = (table: string, bytes: number) => ({
      Put: { TableName: table, Item: { pk: { S: 'u' }, v: { S: 'a'.repeat(bytes - 3) } } },
    });
    const head = {
      Update: {
        TableName: 'events',
        Key: { pk: { S: 'u' }, sk: { S: 'head' } },
        UpdateExpression: 'SET #s = :s',
        ExpressionAttributeNames: { '#s': 'seq' },
        ExpressionAttributeValues: { ':s': { N: '12' } },
      },
    };
    expect(transactionWriteUnits(body([put('conversations', 100), head, put('events', 1500), put('events', 100)]), 'events')).toBe(
      2 + 4 + 2,
    );
    expect(transactionWriteUnits(body([put('conversations', 100)]), 'events')).toBe(0);
  });

  it('counts a Put again for each local index whose sort key the item has', () => {
    const event = {
      Put: { TableName: 'events', Item: { pk: { S: 'u' }, sk: { S: 'e#1' }, type_sort: { S: 't#1' }, resource_sort: { S: 'r#1' } } },
    };
    const marker = { Put: { TableName: 'events', Item: { pk: { S: 'u' }, sk: { S: 'r#x' } } } };
    expect(transactionWriteUnits(body([event, marker]), 'events', ['type_sort', 'resource_sort'])).toBe(3 * 2 + 2);
  });

  it('refuses what it has no rule for rather than guess', () => {
    expect(() => transactionWriteUnits(body([{ Delete: { TableName: 'events', Key: { pk: { S: 'u' } } } }]), 'events')).toThrow(/no rule/i);
  });
});
