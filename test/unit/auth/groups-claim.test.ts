import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeGroups, encodeGroups, groupsClaimName, groupsOfClaim, MAX_GROUPS } from '../../../shared/auth/groups.js';
import { ApiError } from '../../../shared/http/errors.js';
import { clientId } from '../../../shared/http/params.js';

/**
 * The rule of docs/api.md ("Groups"), stated a second way, code point by code
 * point, so that the property below checks the implementation against the
 * contract rather than against itself.
 */
function isGroupIdByTheContract(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  const codePoints = [...value].map((character) => character.codePointAt(0)!);
  if (codePoints.length < 1 || codePoints.length > 128) return false;
  return codePoints.every((point) => {
    const loneSurrogate = point >= 0xd800 && point <= 0xdfff;
    const control = point <= 0x1f || (point >= 0x7f && point <= 0x9f);
    return !loneSurrogate && !control && !/\s/u.test(String.fromCodePoint(point));
  });
}

const acceptedByTheContract = (claim: unknown) =>
  claim === undefined || (Array.isArray(claim) && claim.length <= MAX_GROUPS && claim.every(isGroupIdByTheContract));

/** Group ids near and across the rule's edges: empty, 128 and 129 characters, astral, whitespace, controls, lone surrogates. */
const edgyString = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom(
    '',
    ' ',
    'a b',
    'tab\there',
    'nl\n',
    '\u0000',
    '\u0085',
    '\u00a0nbsp',
    '\u2028',
    '\u3000',
    'ok',
    'cognito-group',
    'team:α',
    '\u{1F600}',
    '\ud800',
    'x\udc00',
  ),
  fc.integer({ min: 120, max: 130 }).map((length) => 'g'.repeat(length)),
  fc.integer({ min: 126, max: 129 }).map((length) => '\u{1F600}'.repeat(length)),
  fc.integer({ min: 127, max: 128 }).map((length) => `${'a'.repeat(length)}\ud83d`),
);

const claims: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.array(edgyString, { maxLength: 8 }) },
  {
    weight: 2,
    arbitrary: fc.array(fc.constantFrom('a', 'b', 'team', '\u{1F600}'), { minLength: MAX_GROUPS - 2, maxLength: MAX_GROUPS + 2 }),
  },
  {
    weight: 2,
    arbitrary: fc.array(
      fc.oneof(
        edgyString,
        fc.integer(),
        fc.constant(null),
        fc.boolean(),
        fc.array(edgyString, { maxLength: 2 }),
        fc.dictionary(edgyString, edgyString, { maxKeys: 2 }),
      ),
      { maxLength: 5 },
    ),
  },
  {
    weight: 2,
    arbitrary: fc.oneof(
      fc.constant(undefined),
      fc.constant(null),
      edgyString,
      fc.integer(),
      fc.boolean(),
      fc.dictionary(edgyString, edgyString, { maxKeys: 3 }),
      fc.constant('a,b'),
      fc.constant('a b'),
    ),
  },
  { weight: 1, arbitrary: fc.array(fc.array(edgyString, { maxLength: 3 }), { maxLength: 3 }) },
);

describe('the groups claim', () => {
  it('is accepted exactly when it is absent or an array of at most 256 group ids by the contract, and holds exactly those ids', () => {
    fc.assert(
      fc.property(claims, (claim) => {
        const read = groupsOfClaim(claim);
        expect('groups' in read).toBe(acceptedByTheContract(claim));
        if ('groups' in read) expect([...read.groups].sort()).toEqual([...new Set((claim as string[] | undefined) ?? [])].sort());
        else expect(read.refused).toMatch(/^Token groups must /);
      }),
      { numRuns: 2000 },
    );
  });

  it('takes a group id exactly when a request takes it as group_id: one rule for both', () => {
    fc.assert(
      fc.property(edgyString, (id) => {
        let takenAsParameter = true;
        try {
          // readParams checks well-formedness before any reader; the reader alone must agree once that holds.
          clientId(id, 'group_id', 'json');
        } catch (error) {
          expect(error).toBeInstanceOf(ApiError);
          takenAsParameter = false;
        }
        expect('groups' in groupsOfClaim([id])).toBe(takenAsParameter && isGroupIdByTheContract(id));
      }),
      { numRuns: 2000 },
    );
  });

  it('folds duplicates, and counts the array as sent against the bound', () => {
    expect(groupsOfClaim(['team', 'team', 'family'])).toEqual({ groups: new Set(['team', 'family']) });
    expect('refused' in groupsOfClaim(Array.from({ length: MAX_GROUPS + 1 }, () => 'team'))).toBe(true);
    expect(groupsOfClaim([])).toEqual({ groups: new Set() });
  });

  it('travels through the authorizer context unchanged, and nothing else decodes', () => {
    fc.assert(
      fc.property(claims, (claim) => {
        const read = groupsOfClaim(claim);
        if ('groups' in read) expect(decodeGroups(encodeGroups(read.groups))).toEqual(read.groups);
      }),
    );
    for (const malformed of [
      undefined,
      null,
      7,
      '',
      'team',
      '{"groups":[]}',
      '[1]',
      '["a b"]',
      '[[]]',
      'null',
      JSON.stringify(Array.from({ length: MAX_GROUPS + 1 }, (_, i) => `g${i}`)),
    ]) {
      expect(decodeGroups(malformed), String(malformed)).toBeUndefined();
    }
  });
});

describe('GROUPS_CLAIM', () => {
  it('defaults to groups and takes namespaced claim names', () => {
    expect(groupsClaimName(undefined)).toBe('groups');
    expect(groupsClaimName('')).toBe('groups');
    for (const name of ['cognito:groups', 'https://example.com/groups', 'realm_access.roles']) expect(groupsClaimName(name)).toBe(name);
  });

  it.each(['sub', 'aud', 'exp', 'has space', 'tab\t', 'x'.repeat(257)])('refuses %j', (name) => {
    expect(() => groupsClaimName(name)).toThrow(/GROUPS_CLAIM/);
  });
});
