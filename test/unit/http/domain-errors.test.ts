import { describe, expect, it } from 'vitest';
import * as domainErrors from '../../../shared/domain-errors.js';
import {
  DomainError,
  InvalidParameter,
  KeyInUse,
  KeyReused,
  NotAMember,
  NotFound,
  NotTheOwner,
  ReferenceMissing,
  SessionRefused,
} from '../../../shared/domain-errors.js';
import { toApiError } from '../../../shared/http/errors.js';

describe('domain errors, answered by the pipeline (toApiError)', () => {
  const answer = (error: DomainError) => {
    const { status, type, code, message, param } = toApiError(error);
    return { status, type, code, message, ...(param === undefined ? {} : { param }) };
  };

  it('answers each refusal of a service with its status, code and message', () => {
    expect(answer(new NotFound('conversation', 'c_1'))).toEqual({
      status: 404,
      type: 'invalid_request_error',
      code: 'resource_missing',
      message: 'No such conversation: c_1',
      param: 'id',
    });
    expect(answer(new ReferenceMissing('conversation_id', 'No such conversation: c_2'))).toEqual({
      status: 400,
      type: 'invalid_request_error',
      code: 'resource_missing',
      message: 'No such conversation: c_2',
      param: 'conversation_id',
    });
    expect(answer(new NotAMember('g1', 'conversation_id'))).toEqual({
      status: 403,
      type: 'permission_error',
      code: 'not_a_member',
      message: 'You are not a member of group g1',
      param: 'conversation_id',
    });
    expect(answer(new NotTheOwner('attachment', 'att_1'))).toEqual({
      status: 403,
      type: 'permission_error',
      code: 'not_owner',
      message: 'Only the uploader may change or delete attachment att_1',
    });
    expect(answer(new InvalidParameter('muted_until', 'contradicts'))).toEqual({
      status: 400,
      type: 'invalid_request_error',
      code: 'parameter_invalid',
      message: 'contradicts',
      param: 'muted_until',
    });
    expect(answer(new SessionRefused('upload_session_expired', 'expired'))).toEqual({
      status: 400,
      type: 'invalid_request_error',
      code: 'upload_session_expired',
      message: 'expired',
    });
    expect(answer(new KeyReused())).toMatchObject({
      status: 409,
      type: 'idempotency_error',
      code: 'idempotency_key_reused',
      param: 'Idempotency-Key',
    });
    expect(answer(new KeyInUse())).toMatchObject({
      status: 409,
      type: 'idempotency_error',
      code: 'idempotency_key_in_use',
      param: 'Idempotency-Key',
    });
  });

  it('maps every domain error the module exports, none to the 500 of an unexpected error', () => {
    const classes = (Object.values(domainErrors) as unknown[]).filter(
      (value): value is new (...args: string[]) => DomainError => typeof value === 'function' && value.prototype instanceof DomainError,
    );
    expect(classes.length).toBeGreaterThanOrEqual(8);
    for (const DomainErrorClass of classes) {
      const error = new DomainErrorClass('a', 'b', 'c');
      expect(error.name).toBe(DomainErrorClass.name);
      expect(toApiError(error).code, DomainErrorClass.name).not.toBe('internal_error');
    }
  });
});
