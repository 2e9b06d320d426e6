import type { DynamoDBRecord } from 'aws-lambda';

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

/**
 * What the cleanup reacts to: items removed from a table. The stack's event
 * source mapping filters on this pattern and the local stream poller applies
 * the same one, so the function sees the same records on both.
 */
export const REMOVALS_FILTER_PATTERN = { eventName: ['REMOVE'] } as const;

export const isRemoval = passes(REMOVALS_FILTER_PATTERN);

/**
 * What the fan-out reacts to: every change of the attachments table (an
 * upload, a rename, a removal each reach the thread's other members). The
 * stack's mapping filters on this pattern, the local poller applies it too.
 */
export const CHANGES_FILTER_PATTERN = { eventName: ['INSERT', 'MODIFY', 'REMOVE'] } as const;

/** The table a stream record comes from: `arn:…:table/<name>/stream/<label>`. */
export function tableOf(record: DynamoDBRecord): string | undefined {
  return /:table\/([^/]+)\/stream\//.exec(record.eventSourceARN ?? '')?.[1];
}

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

type Image = NonNullable<NonNullable<DynamoDBRecord['dynamodb']>['NewImage']>;

/**
 * The added (or changed) item's string and number attributes as plain
 * values (NULL and other types left out), from a stream that carries it
 * (NEW_IMAGE, NEW_AND_OLD_IMAGES).
 */
export const addedItem = (record: DynamoDBRecord): Record<string, string | number> | undefined => plainItem(record.dynamodb?.NewImage);

/** The removed (or changed) item as it was, likewise, from a stream that carries it (OLD_IMAGE, NEW_AND_OLD_IMAGES). */
export const removedItem = (record: DynamoDBRecord): Record<string, string | number> | undefined => plainItem(record.dynamodb?.OldImage);

function plainItem(image: Image | undefined): Record<string, string | number> | undefined {
  if (!image) return undefined;
  const item: Record<string, string | number> = {};
  for (const [name, value] of Object.entries(image)) {
    if (value.S !== undefined) item[name] = value.S;
    else if (value.N !== undefined) item[name] = Number(value.N);
  }
  return item;
}
