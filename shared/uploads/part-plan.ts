/**
 * How a file is cut into parts, within S3's multipart limits: every part but
 * the last at least 5 MiB, at most 5 GiB a part, at most 10,000 parts.
 */
export const MIB = 1024 * 1024;
export const S3_MIN_PART_BYTES = 5 * MIB;
export const S3_MAX_PART_BYTES = 5 * 1024 * MIB;
export const S3_MAX_PARTS = 10_000;
/**
 * Parts are 8 MiB unless the file needs larger ones: big enough that a part's
 * request overhead is small, small enough that a lost part costs seconds.
 */
export const PREFERRED_PART_BYTES = 8 * MIB;

export interface PartPlan {
  part_size: number;
  part_count: number;
}

/** The part size (a whole number of MiB) and count for a file of this many bytes (1 to 10,000 × 5 GiB). */
export function planParts(fileSize: number): PartPlan {
  if (!Number.isSafeInteger(fileSize) || fileSize < 1 || fileSize > S3_MAX_PARTS * S3_MAX_PART_BYTES) {
    throw new RangeError(`No part plan for ${fileSize} bytes`);
  }
  const smallestFitting = Math.ceil(fileSize / S3_MAX_PARTS / MIB) * MIB;
  const part_size = Math.min(S3_MAX_PART_BYTES, Math.max(PREFERRED_PART_BYTES, smallestFitting));
  return { part_size, part_count: Math.ceil(fileSize / part_size) };
}

/** The byte size of part `number` (1-based) under the plan. */
export function partBytes(plan: PartPlan, fileSize: number, number: number): number {
  return number < plan.part_count ? plan.part_size : fileSize - plan.part_size * (plan.part_count - 1);
}
