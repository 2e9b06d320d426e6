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
  it('refuses any malformed parts list with 400 on parts', () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        const error = refusal(() => readParams({ kind: 'json', values: { parts: value } }, completeParams));
        if (error === undefined) return;
        expect((error as ApiError).status).toBe(400);
        expect((error as ApiError).param).toBe('parts');
      }),
      { numRuns: 2000 },
    );
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
