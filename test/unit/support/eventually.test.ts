import { describe, expect, it } from 'vitest';
import { eventually, waitThenLook } from '../../support/eventually.js';

/** A read that counts up from 1, one step per call. */
function counter() {
  let count = 0;
  return async () => {
    count += 1;
    return count;
  };
}

describe('eventually', () => {
  it('returns the first value that holds', async () => {
    expect(await eventually(counter(), (count) => count === 3, 5_000, 1)).toBe(3);
  });

  it('throws, naming the last value read, once its deadline passes without the check holding', async () => {
    await expect(
      eventually(
        async () => ({ left: ['file-1'] }),
        (value) => value.left.length === 0,
        50,
        5,
      ),
    ).rejects.toThrow(/within 50 ms; last read: \{ left: \[ 'file-1' \] \}/);
  });
});

describe('waitThenLook', () => {
  it('returns the last value read when its deadline passes without the check holding, for the caller to assert on', async () => {
    expect(
      await waitThenLook(
        async () => 'still there',
        (value) => value === 'gone',
        50,
        5,
      ),
    ).toBe('still there');
  });
});
