import type { CompletedPart } from '../files/model.js';
import { parameterInvalid, parameterMissing } from '../http/errors.js';
import { integerBetween, type ParamParser, text } from '../http/params.js';
import { S3_MAX_PARTS } from './part-plan.js';

/** Part URLs one call presigns at most. */
export const MAX_PARTS_PER_CALL = 100;
/** An ETag as S3 returns it: an MD5 in hex, maybe with a part count, maybe in quotes. Anything else cannot match. */
const ETAG = /^"?[0-9a-fA-F]{32}(-\d{1,5})?"?$/;

const partNumber = integerBetween(1, S3_MAX_PARTS);

/** JSON: an array of integers. Form: `1,2,5-9`. Either way at most 100 distinct parts, ascending. */
const partNumbers: ParamParser<number[]> = (value, name, kind) => {
  const numbers: number[] = [];
  if (kind === 'json') {
    if (!Array.isArray(value)) throw parameterInvalid(name, `${name} must be an array of part numbers`);
    if (value.length > MAX_PARTS_PER_CALL) throw tooMany(name);
    for (const item of value) numbers.push(partNumber(item, name, kind));
  } else {
    const raw = text(value, name, kind);
    for (const range of raw.split(',')) {
      const match = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(range.trim());
      if (!match) throw parameterInvalid(name, `${name} must be part numbers and ranges such as 1,2,5-9`);
      const first = partNumber(match[1], name, kind);
      const last = match[2] === undefined ? first : partNumber(match[2], name, kind);
      if (last < first) throw parameterInvalid(name, `${name}: the range ${range.trim()} runs backwards`);
      if (numbers.length + (last - first + 1) > MAX_PARTS_PER_CALL) throw tooMany(name);
      for (let number = first; number <= last; number++) numbers.push(number);
    }
  }
  const distinct = [...new Set(numbers)].sort((a, b) => a - b);
  if (distinct.length === 0) throw parameterInvalid(name, `${name} must name at least one part`);
  return distinct;
};

const tooMany = (name: string) => parameterInvalid(name, `${name} may name at most ${MAX_PARTS_PER_CALL} parts per call`);

export const signPartsParams = { part_numbers: partNumbers };

export function partNumbersOf(values: { part_numbers?: number[] }): number[] {
  if (values.part_numbers === undefined) throw parameterMissing('part_numbers');
  return values.part_numbers;
}

/** JSON `[{"part_number", "etag"}]`, ascending by part number without repeats (as S3 requires). */
const completedParts: ParamParser<CompletedPart[]> = (value, name, kind) => {
  if (kind !== 'json') throw parameterInvalid(name, `${name} must be a JSON array; send the body as application/json`);
  if (!Array.isArray(value) || value.length === 0 || value.length > S3_MAX_PARTS) {
    throw parameterInvalid(name, `${name} must be an array of 1 to ${S3_MAX_PARTS} parts`);
  }
  let previous = 0;
  return value.map((item, index) => {
    const where = `${name}[${index}]`;
    if (item === null || typeof item !== 'object' || Array.isArray(item))
      throw parameterInvalid(name, `${where} must be an object with part_number and etag`);
    const unknown = Object.keys(item).find((key) => key !== 'part_number' && key !== 'etag');
    if (unknown !== undefined) throw parameterInvalid(name, `${where} has an unknown field: ${unknown}`);
    const { part_number, etag } = item as Record<string, unknown>;
    if (part_number === undefined) throw parameterMissing(name, `${where}.part_number is required`);
    if (etag === undefined) throw parameterMissing(name, `${where}.etag is required`);
    const number = partNumber(part_number, name, kind);
    if (number <= previous) throw parameterInvalid(name, `${name} must be in ascending part_number order without repeats`);
    previous = number;
    if (typeof etag !== 'string' || !ETAG.test(etag))
      throw parameterInvalid(name, `${where}.etag must be the ETag S3 returned for the part`);
    return { part_number: number, etag };
  });
};

export const completeParams = { parts: completedParts };

export function completedPartsOf(values: { parts?: CompletedPart[] }): CompletedPart[] {
  if (values.parts === undefined) throw parameterMissing('parts');
  return values.parts;
}
