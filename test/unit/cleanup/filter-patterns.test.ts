import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { CHANGES_FILTER_PATTERN, passes, REMOVALS_FILTER_PATTERN } from '../../../shared/cleanup/stream-events.js';
import { BUS_FILTER_PATTERN } from '../../../shared/events/bus.js';

const record = (eventName: DynamoDBRecord['eventName'], sk: string): DynamoDBRecord => ({
  eventName,
  dynamodb: { Keys: { pk: { S: 'u' }, sk: { S: sk } } },
});

/** The local server applies the stack's own filter patterns (shared/cleanup/stream-events.ts): what each lets through. */
describe('filter patterns, as the local stream poller applies them', () => {
  it('passes removals only to the cleanup, and every change to the fan-out', () => {
    expect(['INSERT', 'MODIFY', 'REMOVE'].map((name) => passes(REMOVALS_FILTER_PATTERN)(record(name as 'INSERT', 'attachment')))).toEqual([
      false,
      false,
      true,
    ]);
    expect(['INSERT', 'MODIFY', 'REMOVE'].map((name) => passes(CHANGES_FILTER_PATTERN)(record(name as 'INSERT', 'attachment')))).toEqual([
      true,
      true,
      true,
    ]);
  });

  it('passes new event items to the bus, never the head, a record of a delivered change, or a modified item', () => {
    const bus = passes(BUS_FILTER_PATTERN);
    expect(bus(record('INSERT', 'e#000000000042'))).toBe(true);
    expect(bus(record('INSERT', 'head'))).toBe(false);
    expect(bus(record('MODIFY', 'head'))).toBe(false);
    expect(bus(record('INSERT', 'r#4f1c'))).toBe(false);
    expect(bus(record('MODIFY', 'e#000000000042'))).toBe(false);
    expect(bus({ eventName: 'INSERT' })).toBe(false);
  });
});
