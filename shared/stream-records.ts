import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';

/**
 * Reading DynamoDB stream records, for every consumer of the tables' streams
 * (the cleanup, the fan-out, the operators' bus) and the local stream poller.
 */

/**
 * A filter pattern of an event source mapping or a pipe, as far as this
 * project writes them: per field, the values allowed (exact, or a prefix),
 * or a pattern for the fields within.
 */
export type FilterPattern = { readonly [field: string]: readonly (string | { readonly prefix: string })[] | FilterPattern };

/**
 * Whether a record passes a filter pattern, as the mapping's (or the
 * pipe's) filter decides it: the local server applies the very pattern the
 * stack gives AWS, so both hand a consumer the same records.
 */
export const passes =
  (pattern: FilterPattern) =>
  (record: DynamoDBRecord): boolean =>
    matches(pattern, record);

function matches(pattern: FilterPattern, value: unknown): boolean {
  return Object.entries(pattern).every(([field, rule]) => {
    const found = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[field] : undefined;
    if (!Array.isArray(rule)) return matches(rule as FilterPattern, found);
    return rule.some((allowed: string | { prefix: string }) =>
      typeof allowed === 'string' ? found === allowed : typeof found === 'string' && found.startsWith(allowed.prefix),
    );
  });
}

/** The table a stream record comes from: `arn:…:table/<name>/stream/<label>`. */
export function tableOf(record: DynamoDBRecord): string | undefined {
  return /:table\/([^/]+)\/stream\//.exec(record.eventSourceARN ?? '')?.[1];
}

type Image = NonNullable<NonNullable<DynamoDBRecord['dynamodb']>['NewImage']>;

/** A stream image as plain values, every attribute type read as the document client reads an item. */
export type PlainItem = Record<string, unknown>;

/** The added (or changed) item, from a stream that carries it (NEW_IMAGE, NEW_AND_OLD_IMAGES). */
export const addedItem = (record: DynamoDBRecord): PlainItem | undefined => plainItem(record.dynamodb?.NewImage);

/** The removed (or changed) item as it was, from a stream that carries it (OLD_IMAGE, NEW_AND_OLD_IMAGES). */
export const removedItem = (record: DynamoDBRecord): PlainItem | undefined => plainItem(record.dynamodb?.OldImage);

// aws-lambda types the image's attribute values apart from the SDK's; the wire shape is the same.
const plainItem = (image: Image | undefined): PlainItem | undefined =>
  image ? unmarshall(image as Record<string, AttributeValue>) : undefined;
