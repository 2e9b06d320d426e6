import { describe, expect, it } from 'vitest';
import { isBackendUnavailable } from '../../../shared/http/unavailable.js';

describe('isBackendUnavailable', () => {
  it('recognises refused connections, throttling and server faults', () => {
    expect(isBackendUnavailable(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isBackendUnavailable(Object.assign(new Error('slow down'), { name: 'ProvisionedThroughputExceededException' }))).toBe(true);
    expect(isBackendUnavailable(Object.assign(new Error('boom'), { $metadata: { httpStatusCode: 500 } }))).toBe(true);
    expect(isBackendUnavailable(new Error('wrapped', { cause: Object.assign(new Error('x'), { code: 'ECONNRESET' }) }))).toBe(true);
  });

  it('leaves our own bugs and client errors alone', () => {
    expect(isBackendUnavailable(new TypeError('undefined is not a function'))).toBe(false);
    expect(isBackendUnavailable(Object.assign(new Error('bad'), { name: 'ValidationException', $metadata: { httpStatusCode: 400 } }))).toBe(false);
    expect(isBackendUnavailable('string')).toBe(false);
  });
});
