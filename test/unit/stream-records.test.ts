import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { REMOVALS_FILTER_PATTERN } from '../../shared/cleanup/stream-events.js';
import { CHANGES_FILTER_PATTERN } from '../../shared/conversations/fan-out.js';
import { BUS_FILTER_PATTERN } from '../../shared/events/bus.js';
import { addedItem, passes, removedItem, tableOf } from '../../shared/stream-records.js';

const record = (eventName: DynamoDBRecord['eventName'], sk: string): DynamoDBRecord => ({
  eventName,
  dynamodb: { Keys: { pk: { S: 'u' }, sk: { S: sk } } },
});

/** The local server applies the stack's own filter patterns (each defined by its consumer): what each lets through. */
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

describe('stream record images', () => {
  it('reads an image whole: NULL, BOOL, M and L attributes beside strings and numbers', () => {
    const image = {
      pk: { S: 'user_1' },
      sk: { S: 'attachment' },
      file_size: { N: '12' },
      message_id: { NULL: true },
      placed: { BOOL: false },
      counterpart: { M: { kind: { S: 'group' }, id: { S: 'g_1' }, since: { N: '1764000000' } } },
      parts: { L: [{ S: 'a' }, { N: '2' }, { NULL: true }, { M: { done: { BOOL: true } } }] },
    };
    const record: DynamoDBRecord = { eventName: 'MODIFY', dynamodb: { NewImage: image, OldImage: image } };
    const whole = {
      pk: 'user_1',
      sk: 'attachment',
      file_size: 12,
      message_id: null,
      placed: false,
      counterpart: { kind: 'group', id: 'g_1', since: 1_764_000_000 },
      parts: ['a', 2, null, { done: true }],
    };
    expect(addedItem(record)).toEqual(whole);
    expect(removedItem(record)).toEqual(whole);
  });

  it('has no image where the stream carries none', () => {
    const keysOnly: DynamoDBRecord = { eventName: 'REMOVE', dynamodb: { Keys: { pk: { S: 'u' }, sk: { S: 'attachment' } } } };
    expect(addedItem(keysOnly)).toBeUndefined();
    expect(removedItem(keysOnly)).toBeUndefined();
  });

  it("names the table from the record's stream ARN", () => {
    const arn = 'arn:aws:dynamodb:eu-west-1:123456789012:table/messaging-attachments/stream/2026-01-01T00:00:00.000';
    expect(tableOf({ eventSourceARN: arn })).toBe('messaging-attachments');
    expect(tableOf({})).toBeUndefined();
  });
});
