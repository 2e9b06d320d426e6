import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ApiError } from '../../../shared/http/errors.js';
import { clientId, flag, nullable, readParams, text, timestamp } from '../../../shared/http/params.js';
import { limit, pageRequest } from '../../../shared/pagination.js';

const failure = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error as ApiError;
  }
  throw new Error('expected a failure');
};

describe('readParams', () => {
  it('reads the named parameters and leaves absent ones undefined', () => {
    expect(readParams({ kind: 'form', values: { is_muted: 'true' } }, { is_muted: flag, is_pinned: flag })).toEqual({ is_muted: true });
  });

  it('refuses an unknown name, including inherited object keys', () => {
    expect(failure(() => readParams({ kind: 'json', values: { id: 'x' } }, { is_muted: flag }))).toMatchObject({
      status: 400,
      code: 'parameter_unknown',
      param: 'id',
    });
    expect(failure(() => readParams({ kind: 'json', values: { toString: 'x' } }, { is_muted: flag }))).toMatchObject({
      code: 'parameter_unknown',
    });
  });

  it('refuses a string holding a lone surrogate before any reader sees it, whatever the parameter', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 20 }),
        fc.integer({ min: 0xd800, max: 0xdfff }),
        fc.constantFrom('query', 'form', 'json') as fc.Arbitrary<'query' | 'form' | 'json'>,
        (around, surrogate, kind) => {
          const value = `${around}${String.fromCharCode(surrogate)}`;
          // Not preceded by a high surrogate that would pair with it.
          fc.pre(!/[\ud800-\udbff]$/.test(around) || surrogate < 0xdc00);
          let seen = false;
          const spy = (input: unknown, name: string, k: 'query' | 'form' | 'json') => {
            seen = true;
            return text(input, name, k);
          };
          expect(failure(() => readParams({ kind, values: { name: value } }, { name: spy }))).toMatchObject({
            code: 'parameter_invalid',
            param: 'name',
          });
          expect(seen).toBe(false);
        },
      ),
      { seed: 10, numRuns: 100 },
    );
    expect(readParams({ kind: 'json', values: { name: 'emoji \u{1F600} pair' } }, { name: text })).toEqual({
      name: 'emoji \u{1F600} pair',
    });
  });
});

describe('readers', () => {
  it('reads booleans as the words true/false from forms and as JSON booleans from JSON', () => {
    expect(flag('false', 'f', 'query')).toBe(false);
    expect(flag(true, 'f', 'json')).toBe(true);
    expect(failure(() => flag('true', 'f', 'json')).code).toBe('parameter_invalid');
    expect(failure(() => flag(1, 'f', 'json')).code).toBe('parameter_invalid');
  });

  it('reads timestamps as non-negative safe integers', () => {
    expect(timestamp('0', 't', 'form')).toBe(0);
    expect(timestamp(1700000000, 't', 'json')).toBe(1700000000);
    for (const bad of ['-1', '1e3', ' 1', '99999999999999999']) expect(failure(() => timestamp(bad, 't', 'form')).param).toBe('t');
    expect(failure(() => timestamp(1.5, 't', 'json')).code).toBe('parameter_invalid');
  });

  it('clears a nullable field with an empty form value or JSON null, but not an empty JSON string', () => {
    expect(nullable(timestamp)('', 'a', 'form')).toBeNull();
    expect(nullable(timestamp)(null, 'a', 'json')).toBeNull();
    expect(failure(() => nullable(clientId)('', 'p', 'json')).code).toBe('parameter_invalid');
  });

  it('accepts client ids of 1-128 characters without whitespace or control characters', () => {
    expect(clientId('grp:42/é#x', 'g', 'form')).toBe('grp:42/é#x');
    for (const bad of ['', ' a', 'a\tb', 'a\u0000', 'x'.repeat(129), 5]) expect(failure(() => clientId(bad, 'g', 'json')).param).toBe('g');
  });

  it('reads limit from 1 to 100 only', () => {
    expect(limit('100', 'limit', 'query')).toBe(100);
    for (const bad of ['0', '101', '-1', 'abc', '']) expect(failure(() => limit(bad, 'limit', 'query')).param).toBe('limit');
  });
});

describe('pageRequest', () => {
  it('defaults to ten and refuses both cursors at once', () => {
    expect(pageRequest({})).toEqual({ limit: 10 });
    expect(failure(() => pageRequest({ starting_after: 'a', ending_before: 'b' })).code).toBe('parameter_invalid');
  });
});
