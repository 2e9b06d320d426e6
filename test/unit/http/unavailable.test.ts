import { describe, expect, it } from 'vitest';
import { WriteContention } from '../../../shared/dynamo/busy-retry.js';
import { toApiError } from '../../../shared/http/errors.js';
import { isBackendThrottled, isBackendUnavailable } from '../../../shared/http/unavailable.js';

const named = (name: string, fields: Record<string, unknown> = {}) => Object.assign(new Error(name), { name, ...fields });

describe('isBackendUnavailable', () => {
  it('recognises refused connections, server faults and the spent budget', () => {
    expect(isBackendUnavailable(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isBackendUnavailable(Object.assign(new Error('boom'), { $metadata: { httpStatusCode: 500 } }))).toBe(true);
    expect(isBackendUnavailable(named('InternalServerError'))).toBe(true);
    expect(isBackendUnavailable(named('DeadlineExceeded'))).toBe(true);
    expect(isBackendUnavailable(new Error('wrapped', { cause: Object.assign(new Error('x'), { code: 'ECONNRESET' }) }))).toBe(true);
  });

  it('leaves our own bugs, client errors and contention alone', () => {
    expect(isBackendUnavailable(new TypeError('undefined is not a function'))).toBe(false);
    expect(isBackendUnavailable(Object.assign(new Error('bad'), { name: 'ValidationException', $metadata: { httpStatusCode: 400 } }))).toBe(
      false,
    );
    expect(isBackendUnavailable(named('TransactionConflictException', { $metadata: { httpStatusCode: 400 } }))).toBe(false);
    expect(isBackendUnavailable(named('TransactionCanceledException', { CancellationReasons: [{ Code: 'ValidationError' }] }))).toBe(false);
    expect(isBackendUnavailable('string')).toBe(false);
  });
});

describe('isBackendThrottled', () => {
  it("recognises DynamoDB's and S3's throttling, a transaction cancelled for it, and either as a cause", () => {
    expect(isBackendThrottled(named('ProvisionedThroughputExceededException'))).toBe(true);
    expect(isBackendThrottled(named('ThrottlingException'))).toBe(true);
    expect(isBackendThrottled(named('SlowDown', { $metadata: { httpStatusCode: 503 } }))).toBe(true);
    expect(
      isBackendThrottled(named('TransactionCanceledException', { CancellationReasons: [{ Code: 'None' }, { Code: 'ThrottlingError' }] })),
    ).toBe(true);
    expect(isBackendThrottled(new Error('wrapped', { cause: named('ThrottlingException') }))).toBe(true);
    expect(isBackendThrottled(named('InternalServerError'))).toBe(false);
  });
});

describe('what a backend error answers', () => {
  it('throttling past the budget: 503 service_unavailable with Retry-After', () => {
    const answer = toApiError(named('TransactionCanceledException', { CancellationReasons: [{ Code: 'ThrottlingError' }] }));
    expect([answer.status, answer.code, answer.headers['retry-after']]).toEqual([503, 'service_unavailable', '2']);
  });

  it('an outage: 503 service_unavailable', () => {
    const answer = toApiError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    expect([answer.status, answer.code]).toEqual([503, 'service_unavailable']);
  });

  it('contention past the budget: 429 write_contention with Retry-After, never a 5xx', () => {
    const answer = toApiError(new WriteContention());
    expect([answer.status, answer.type, answer.code, answer.headers['retry-after']]).toEqual([
      429,
      'rate_limit_error',
      'write_contention',
      '1',
    ]);
  });

  it('a transaction cancelled for any other reason: 500 (a bug of ours)', () => {
    expect(toApiError(named('TransactionCanceledException', { CancellationReasons: [{ Code: 'ValidationError' }] })).status).toBe(500);
  });
});
