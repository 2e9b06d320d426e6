import type { DynamoDBRecord } from 'aws-lambda';
import { passes } from '../stream-records.js';

/**
 * What the cleanup reacts to: items removed from a table. The stack's event
 * source mapping filters on this pattern and the local stream poller applies
 * the same one, so the function sees the same records on both.
 */
export const REMOVALS_FILTER_PATTERN = { eventName: ['REMOVE'] } as const;

export const isRemoval = passes(REMOVALS_FILTER_PATTERN);

/** The removed item's key (all that KEYS_ONLY streams carry). */
export function removedKey(record: DynamoDBRecord): { pk: string; sk: string } | undefined {
  const keys = record.dynamodb?.Keys;
  const pk = keys?.pk?.S;
  const sk = keys?.sk?.S;
  return pk !== undefined && sk !== undefined ? { pk, sk } : undefined;
}

/** A string attribute of the removed item, from a stream that carries it (OLD_IMAGE, NEW_AND_OLD_IMAGES). */
export function removedString(record: DynamoDBRecord, name: string): string | undefined {
  return record.dynamodb?.OldImage?.[name]?.S;
}
