import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MIB, partBytes, planParts, S3_MAX_PART_BYTES, S3_MAX_PARTS, S3_MIN_PART_BYTES } from '../../../shared/uploads/part-plan.js';

const anySize = fc.oneof(
  fc.integer({ min: 1, max: 64 * MIB }),
  fc.integer({ min: 1, max: 5 * 1024 ** 3 }),
  fc.integer({ min: 1, max: S3_MAX_PARTS * S3_MAX_PART_BYTES }),
);

describe('planParts', () => {
  it('fits every size within S3 limits: at most 10,000 parts, 5 MiB to 5 GiB each but the last, which is never empty', () => {
    fc.assert(
      fc.property(anySize, (size) => {
        const plan = planParts(size);
        expect(plan.part_count).toBeLessThanOrEqual(S3_MAX_PARTS);
        expect(plan.part_size).toBeGreaterThanOrEqual(S3_MIN_PART_BYTES);
        expect(plan.part_size).toBeLessThanOrEqual(S3_MAX_PART_BYTES);
        expect(plan.part_size % MIB).toBe(0);
        const last = partBytes(plan, size, plan.part_count);
        expect(last).toBeGreaterThan(0);
        expect(last).toBeLessThanOrEqual(plan.part_size);
        expect(plan.part_size * (plan.part_count - 1) + last).toBe(size);
      }),
      { numRuns: 2000 },
    );
  });

  it('uses 8 MiB parts up to the largest file 10,000 of them hold, and larger ones past it', () => {
    expect(planParts(1)).toEqual({ part_size: 8 * MIB, part_count: 1 });
    expect(planParts(5 * 1024 ** 3)).toEqual({ part_size: 8 * MIB, part_count: 640 });
    expect(planParts(S3_MAX_PARTS * 8 * MIB)).toEqual({ part_size: 8 * MIB, part_count: S3_MAX_PARTS });
    expect(planParts(S3_MAX_PARTS * 8 * MIB + 1)).toEqual({
      part_size: 9 * MIB,
      part_count: Math.ceil((S3_MAX_PARTS * 8 * MIB + 1) / (9 * MIB)),
    });
  });

  it('refuses sizes no multipart upload can hold', () => {
    for (const size of [0, -1, 1.5, S3_MAX_PARTS * S3_MAX_PART_BYTES + 1, Number.NaN]) expect(() => planParts(size)).toThrow(RangeError);
  });
});
