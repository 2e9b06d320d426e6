import { CLIENT_ID_RULE, isClientId, isWellFormed } from '../text.js';
import { dictionary } from './dictionary.js';
import { parameterInvalid, parameterUnknown } from './errors.js';

/**
 * Parameters as they arrived: form and query values are strings, JSON values
 * keep their JSON types. Parsers interpret each according to where it came from.
 */
export type ParamKind = 'query' | 'form' | 'json';

export interface ParamSource {
  kind: ParamKind;
  values: Record<string, unknown>;
}

/** Parses one parameter's value into what the endpoint takes, or refuses it (400) naming the parameter. */
export type ParamParser<T> = (value: unknown, name: string, kind: ParamKind) => T;

export type ParamSpec = Record<string, ParamParser<unknown>>;
export type Parsed<S extends ParamSpec> = { [K in keyof S]?: ReturnType<S[K]> };

/**
 * Reads exactly the parameters named in the spec. Any other name is refused,
 * which also keeps clients from writing fields they do not own (id, owner, ...).
 * Every string value is checked to be well-formed Unicode before its parser
 * sees it, so no parser and nothing behind it can meet a lone surrogate.
 */
export function readParams<S extends ParamSpec>(source: ParamSource, spec: S): Parsed<S> {
  const result = dictionary<unknown>();
  for (const [name, value] of Object.entries(source.values)) {
    const read = Object.hasOwn(spec, name) ? spec[name] : undefined;
    if (!read) throw parameterUnknown(name);
    result[name] = read(wellFormed(value, name), name, source.kind);
  }
  return result as Parsed<S>;
}

/** A client string with no UTF-8 form cannot be stored or served: refused, whatever the parameter. */
export function wellFormed<T>(value: T, name: string): T {
  if (typeof value === 'string' && !isWellFormed(value)) {
    throw parameterInvalid(name, `${name} must be well-formed Unicode (it holds a lone surrogate)`);
  }
  return value;
}

export const flag: ParamParser<boolean> = (value, name, kind) => {
  if (kind === 'json') {
    if (typeof value === 'boolean') return value;
  } else if (value === 'true' || value === 'false') {
    return value === 'true';
  }
  throw parameterInvalid(name, `${name} must be true or false`);
};

/** Ids that clients give us (isClientId: the rule a token's group ids follow too). */
export const clientId: ParamParser<string> = (value, name) => {
  if (typeof value === 'string' && isClientId(value)) return value;
  throw parameterInvalid(name, `${name} must be ${CLIENT_ID_RULE}`);
};

/** An empty form value or JSON null clears the field. */
export const nullable =
  <T>(read: ParamParser<T>): ParamParser<T | null> =>
  (value, name, kind) =>
    value === null || (kind !== 'json' && value === '') ? null : read(value, name, kind);

export const timestamp: ParamParser<number> = (value, name, kind) => {
  const number = kind === 'json' ? value : typeof value === 'string' && /^\d{1,16}$/.test(value) ? Number(value) : NaN;
  if (typeof number === 'number' && Number.isSafeInteger(number) && number >= 0) return number;
  throw parameterInvalid(name, `${name} must be a non-negative integer of Unix seconds`);
};

export const integerBetween =
  (min: number, max: number): ParamParser<number> =>
  (value, name, kind) => {
    const number = kind === 'json' ? value : typeof value === 'string' && /^-?\d{1,16}$/.test(value) ? Number(value) : NaN;
    if (typeof number === 'number' && Number.isSafeInteger(number) && number >= min && number <= max) return number;
    throw parameterInvalid(name, `${name} must be an integer from ${min} to ${max}`);
  };

export const text: ParamParser<string> = (value, name) => {
  if (typeof value === 'string') return value;
  throw parameterInvalid(name, `${name} must be a string`);
};
