import { parameterInvalid } from './http/errors.js';
import { integerBetween, type ParamParser } from './http/params.js';

export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 100;

/** Stripe-style cursors: the id of the last (first) object of the page the client holds. */
export interface PageRequest {
  limit: number;
  startingAfter?: string;
  endingBefore?: string;
}

export interface Page<T> {
  has_more: boolean;
  data: T[];
}

export const limit = integerBetween(1, MAX_LIMIT);

export const cursor =
  (isValid: (id: string) => boolean): ParamParser<string> =>
  (value, name) => {
    if (typeof value === 'string' && isValid(value)) return value;
    throw parameterInvalid(name, `${name} must be the id of an object of this list`);
  };

export function pageRequest(params: { limit?: number; starting_after?: string; ending_before?: string }): PageRequest {
  if (params.starting_after !== undefined && params.ending_before !== undefined) {
    throw parameterInvalid('ending_before', 'starting_after and ending_before cannot be used together');
  }
  return {
    limit: params.limit ?? DEFAULT_LIMIT,
    ...(params.starting_after === undefined ? {} : { startingAfter: params.starting_after }),
    ...(params.ending_before === undefined ? {} : { endingBefore: params.ending_before }),
  };
}
