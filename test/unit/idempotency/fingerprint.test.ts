import { describe, expect, it } from 'vitest';
import { canonicalJson, fingerprintOf } from '../../../shared/idempotency/service.js';

describe('request fingerprints', () => {
  it('do not depend on the order of fields', () => {
    expect(fingerprintOf('POST /v1/attachments', { a: 1, b: { c: 2, d: [3, 4] } })).toBe(
      fingerprintOf('POST /v1/attachments', { b: { d: [3, 4], c: 2 }, a: 1 }),
    );
  });

  it('differ for a different value, route or field set', () => {
    const base = fingerprintOf('POST /v1/conversations', { kind: 'contact', id: 'a' });
    expect(fingerprintOf('POST /v1/conversations', { kind: 'contact', id: 'b' })).not.toBe(base);
    expect(fingerprintOf('POST /v1/attachments', { kind: 'contact', id: 'a' })).not.toBe(base);
    expect(fingerprintOf('POST /v1/conversations', { kind: 'group', id: 'a' })).not.toBe(base);
  });

  it('leave out absent (undefined) fields, as the request never had them', () => {
    expect(canonicalJson({ a: 1, b: undefined })).toBe('{"a":1}');
  });
});
