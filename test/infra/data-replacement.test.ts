import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPOSITORY_ROOT } from '../../infra/declarations/repository.js';
import type { Json } from '../support/api.js';
import { resourcesOf, type Synthesized, synthesize } from './synth.js';

/**
 * What CloudFormation cannot change on a data resource without replacing it (a new, empty table or
 * bucket, the old one retained and cut off): the logical id, the type, and per type the properties its
 * reference marks "Replacement" or "Updates are not supported". A table's key attributes' types go with
 * its key schema.
 */
const DATA_TYPES = ['AWS::DynamoDB::Table', 'AWS::DynamoDB::GlobalTable', 'AWS::S3::Bucket'];
const SNAPSHOT = 'test/infra/data-resources.json';

interface Snapshot {
  /** Each data resource's replacing properties, as the stack has them. */
  resources: Record<string, Json>;
  /** Replacing changes made on purpose: the resource, what it was, and how its existing data moves. */
  replaced: { resource: string; was: Json; migration: string }[];
}

type Resource = { Type: string; Properties: Record<string, Json> };

function replacingProperties({ Type, Properties }: Resource): Json {
  if (Type === 'AWS::S3::Bucket') return { type: Type, BucketName: Properties.BucketName ?? null };
  const types = new Map<string, string>(
    (Properties.AttributeDefinitions ?? []).map((definition: Json) => [definition.AttributeName, definition.AttributeType]),
  );
  const keys = (schema: Json[]) => schema.map(({ AttributeName, KeyType }) => ({ AttributeName, KeyType, type: types.get(AttributeName) }));
  return {
    type: Type,
    TableName: Properties.TableName ?? null,
    KeySchema: keys(Properties.KeySchema),
    LocalSecondaryIndexes: (Properties.LocalSecondaryIndexes ?? []).map((index: Json) => ({ ...index, KeySchema: keys(index.KeySchema) })),
  };
}

let synthesized: Synthesized;
beforeAll(() => {
  synthesized = synthesize();
});
afterAll(() => synthesized?.remove());

describe('data resources', () => {
  const snapshot = JSON.parse(readFileSync(join(REPOSITORY_ROOT, SNAPSHOT), 'utf8')) as Snapshot;

  it(`are not replaced by a deploy: their key schemas, local indexes, names and logical ids match ${SNAPSHOT}`, () => {
    const current = Object.fromEntries(
      DATA_TYPES.flatMap((type) => Object.entries(resourcesOf(synthesized.template, type))).map(([id, resource]) => [
        id,
        replacingProperties(resource as Resource),
      ]),
    );
    // A difference empties a table or a bucket on the next deploy. If meant: write the new value in the
    // snapshot's `resources` and the old one in `replaced`, with how the existing data moves (docs/deploying.md).
    expect(current, `a deploy would replace a data resource: see ${SNAPSHOT}`).toEqual(snapshot.resources);
  });

  it('record each replacement made on purpose with how the existing data moves', () => {
    for (const { resource, was, migration } of snapshot.replaced) {
      expect(migration.trim().length, resource).toBeGreaterThan(20);
      expect(was, resource).not.toEqual(snapshot.resources[resource]);
    }
  });
});
