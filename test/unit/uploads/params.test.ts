import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../shared/http/errors.js';
import { readParams } from '../../../shared/http/params.js';
import { completeParams, MAX_PARTS_PER_CALL, partNumbersOf, signPartsParams } from '../../../shared/uploads/params.js';
import { startParams } from '../../../shared/uploads/start-params.js';

const readNumbers = (kind: 'json' | 'form', value: unknown) =>
  partNumbersOf(readParams({ kind, values: { part_numbers: value } }, signPartsParams));
const refusal = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
};

describe('part_numbers', () => {
  it('reads any list of up to 100 part numbers as its distinct numbers, ascending, in JSON and as form ranges alike', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 10_000 }), { minLength: 1, maxLength: MAX_PARTS_PER_CALL }), (numbers) => {
        const expected = [...new Set(numbers)].sort((a, b) => a - b);
        expect(readNumbers('json', numbers)).toEqual(expected);
        expect(readNumbers('form', numbers.join(','))).toEqual(expected);
        expect(readNumbers('form', expected.map((n) => `${n}-${n}`).join(','))).toEqual(expected);
      }),
    );
  });

  it('refuses anything else with a 400 on part_numbers, never another error', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.anything()), fc.constantFrom<'json' | 'form'>('json', 'form'), (value, kind) => {
        const error = refusal(() => readNumbers(kind, value));
        if (error === undefined) return; // e.g. "7" in a form, or [3] in JSON: valid
        expect(error).toBeInstanceOf(ApiError);
        expect((error as ApiError).status).toBe(400);
        expect((error as ApiError).param).toBe('part_numbers');
      }),
      { numRuns: 2000 },
    );
    for (const bad of ['', '0', '10001', '2-1', '1-101', '1,,2', ' - ', '1e3'])
      expect((refusal(() => readNumbers('form', bad)) as ApiError).status).toBe(400);
  });
});

describe('complete parts', () => {
  const etag = '"9b2cf535f27731c974343645a3985328"';
  const readParts = (value: unknown) => readParams({ kind: 'json', values: { parts: value } }, completeParams);
  const expectRefusedOnParts = (value: unknown) => {
    const error = refusal(() => readParts(value));
    expect(error, JSON.stringify(value)).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(400);
    expect((error as ApiError).param).toBe('parts');
  };
  const part = (part_number: unknown, tag: unknown = etag) => ({ part_number, etag: tag });
  /** Malformed by construction: what makes each one so is stated here, not read from the parser. */
  const notAList = fc.anything().filter((value) => !Array.isArray(value));
  const badNumber = fc.oneof(
    fc.constantFrom(0, -1, 10_001, 1.5, null, true, [], {}, '1'),
    fc.integer({ max: 0 }),
    fc.integer({ min: 10_001 }),
    fc.double().filter((n) => !Number.isInteger(n)),
  );
  const badEtag = fc.oneof(
    fc.constantFrom('', 'etag', '"9b2cf535"', `${etag}x`, 42, null, {}),
    fc.string().filter((text) => !/^"?[0-9a-fA-F]{32}(-\d{1,5})?"?$/.test(text)),
  );
  const badItem = fc.oneof(
    badNumber.map((number) => part(number)),
    badEtag.map((tag) => part(1, tag)),
    fc.constantFrom({ etag }, { part_number: 1 }, { ...part(1), size: 5 }, null, 1, 'part', [part(1)]),
  );
  const withOneBad = fc
    .tuple(fc.integer({ min: 0, max: 5 }), badItem)
    .map(([before, bad]) => [...Array.from({ length: before }, (_, index) => part(index + 1)), bad]);
  const outOfOrder = fc
    .uniqueArray(fc.integer({ min: 1, max: 10_000 }), { minLength: 2, maxLength: 20 })
    .map((numbers) => [...numbers].sort((a, b) => b - a).map((number) => part(number)));
  const repeated = fc.integer({ min: 1, max: 10_000 }).map((number) => [part(number), part(number)]);

  it('refuses every malformed parts list with 400 on parts: not a list, empty, a bad item, out of order, a repeat', () => {
    fc.assert(fc.property(fc.oneof(notAList, fc.constant([]), withOneBad, outOfOrder, repeated), expectRefusedOnParts), { numRuns: 2000 });
    for (const bad of [
      undefined,
      'parts',
      {},
      [],
      [part(0)],
      [part(10_001)],
      [part('1')],
      [part(1.5)],
      [part(1, 'not-an-etag')],
      [part(1, '')],
      [{ etag }],
      [{ part_number: 1 }],
      [{ ...part(1), extra: true }],
      [part(2), part(1)],
      [part(1), part(1)],
      [null],
    ])
      expectRefusedOnParts(bad);
  });

  it('takes ascending parts with S3 ETags, quoted or not', () => {
    const parts = [
      { part_number: 1, etag },
      { part_number: 4, etag: etag.replace(/"/g, '') },
    ];
    expect(readParams({ kind: 'json', values: { parts } }, completeParams).parts).toEqual(parts);
  });
});

describe('file_size', () => {
  const read = (value: unknown, kind: 'json' | 'form' = 'json') =>
    readParams({ kind, values: { file_size: value } }, startParams(1000)).file_size;
  it('takes 1 to the limit, refuses more with 413 and anything else with 400', () => {
    expect(read(1)).toBe(1);
    expect(read(1000)).toBe(1000);
    expect(read('1000', 'form')).toBe(1000);
    expect((refusal(() => read(1001)) as ApiError).status).toBe(413);
    for (const bad of [0, -1, 1.5, '10', null, true, [], {}]) expect((refusal(() => read(bad)) as ApiError).status).toBe(400);
  });
});
