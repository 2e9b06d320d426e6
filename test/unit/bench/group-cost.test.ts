import { describe, expect, it } from 'vitest';
import { itemsRead, itemsWritten } from '../../../bench/dynamo-capacity.js';
import { groupPushDollars, meetsGoal, uploadDollars } from '../../../bench/group-cost.js';

describe("an upload's DynamoDB and Lambda dollars", () => {
  it('prices read and write units at the on-demand rates', () => {
    const { dynamodb } = uploadDollars({ readUnits: 8, writeUnits: 16 }, []);
    expect(dynamodb).toBeCloseTo((8 * 0.125 + 16 * 0.625) / 1e6, 12);
  });

  it('bills each invocation rounded up to the ms, at 512 MB arm64, plus its request', () => {
    const { lambda } = uploadDollars({ readUnits: 0, writeUnits: 0 }, [1.2, 9.01]);
    const gbSeconds = 0.5 * ((2 + 10) / 1000);
    expect(lambda).toBeCloseTo((2 * 0.2) / 1e6 + gbSeconds * 0.0000133334, 12);
  });

  it('totals both', () => {
    const dollars = uploadDollars({ readUnits: 3, writeUnits: 20 }, [18]);
    expect(dollars.total).toBeCloseTo(dollars.dynamodb + dollars.lambda, 8);
  });
});

describe("a large group's push on AppSync Events", () => {
  it('counts one publish and a delivery per connected member', () => {
    expect(groupPushDollars(1_000)).toEqual({ operations: 1_001, dollars: 0.001001 });
  });
});

describe("the large groups' goal", () => {
  const direct = { dynamodb: 0.00001, lambda: 0.00001, total: 0.00002 };

  it('is met at up to 3 × the direct upload and 2 s', () => {
    expect(meetsGoal(direct, { cost: { ...direct, total: 0.00006 }, lastMemberMs: 2_000 })).toEqual({ costRatio: 3, met: true });
  });

  it('is missed above 3 × or 2 s', () => {
    expect(meetsGoal(direct, { cost: { ...direct, total: 0.000061 }, lastMemberMs: 10 }).met).toBe(false);
    expect(meetsGoal(direct, { cost: direct, lastMemberMs: 2_001 }).met).toBe(false);
  });
});

describe('items a DynamoDB call wrote and read', () => {
  it("counts a transaction's writes but not its condition checks", () => {
    const input = { TransactItems: [{ Put: {} }, { Update: {} }, { ConditionCheck: {} }, { Delete: {} }] };
    expect(itemsWritten('TransactWriteItems', input)).toBe(3);
  });

  it("counts a batch's requests over its tables, and one per single-item write", () => {
    expect(itemsWritten('BatchWriteItem', { RequestItems: { a: [{}, {}], b: [{}] } })).toBe(3);
    expect(itemsWritten('UpdateItem', {})).toBe(1);
    expect(itemsWritten('GetItem', {})).toBe(0);
  });

  it('counts what reads found: an item got, a query scanned, a batch answered', () => {
    expect(itemsRead('GetItem', {}, { Item: {} })).toBe(1);
    expect(itemsRead('GetItem', {}, {})).toBe(0);
    expect(itemsRead('Query', {}, { ScannedCount: 7, Count: 2 })).toBe(7);
    expect(itemsRead('BatchGetItem', {}, { Responses: { a: [{}, {}], b: [{}] } })).toBe(3);
    expect(itemsRead('PutItem', {}, {})).toBe(0);
  });
});
