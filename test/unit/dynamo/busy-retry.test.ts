import { isThrottlingError } from '@smithy/core/retry';
import { describe, expect, it } from 'vitest';
import { DeadlineExceeded, withinBudget } from '../../../shared/deadline.js';
import {
  busyOf,
  CONTENDED,
  MIN_ATTEMPT_MS,
  PACING,
  retryWhileBusy,
  tallyingRetries,
  WriteContention,
} from '../../../shared/dynamo/busy-retry.js';

const timeLeft = (ms: number) => ({ getRemainingTimeInMillis: () => ms });
const named = (name: string, fields: Record<string, unknown> = {}) => Object.assign(new Error(name), { name, ...fields });
const cancelled = (...codes: string[]) => named('TransactionCanceledException', { CancellationReasons: codes.map((Code) => ({ Code })) });

describe('busyOf', () => {
  it("names DynamoDB's throttling errors and a transaction cancelled for throttling as throttling", () => {
    expect(busyOf(named('ProvisionedThroughputExceededException'))).toBe('throttling');
    expect(busyOf(named('ThrottlingException'))).toBe('throttling');
    expect(busyOf(named('RequestLimitExceeded'))).toBe('throttling');
    expect(busyOf(cancelled('None', 'ThrottlingError'))).toBe('throttling');
  });

  it('names conflicts with other writers as contention', () => {
    expect(busyOf(named('TransactionConflictException'))).toBe('contention');
    expect(busyOf(named('TransactionInProgressException'))).toBe('contention');
    expect(busyOf(cancelled('TransactionConflict', 'None'))).toBe('contention');
  });

  it('leaves failed conditions, validation errors, outages and bugs alone', () => {
    expect(busyOf(cancelled('ConditionalCheckFailed', 'TransactionConflict'))).toBeUndefined();
    expect(busyOf(cancelled('ValidationError'))).toBeUndefined();
    expect(busyOf(named('InternalServerError'))).toBeUndefined();
    expect(busyOf(named('DeadlineExceeded'))).toBeUndefined();
    expect(busyOf(new TypeError('x is undefined'))).toBeUndefined();
    expect(busyOf('TransactionConflictException')).toBeUndefined();
  });

  it("covers what the SDK's own retry leaves out: a transaction cancelled for throttling", () => {
    // The SDK retries ProvisionedThroughputExceededException itself, a cancelled transaction never.
    expect(isThrottlingError(cancelled('ThrottlingError') as never)).toBe(false);
    expect(isThrottlingError(named('ProvisionedThroughputExceededException') as never)).toBe(true);
  });
});

describe('retryWhileBusy', () => {
  it('tries a contended write again until it answers, and counts the retries of the invocation', async () => {
    let calls = 0;
    const { value, retries } = await tallyingRetries(() =>
      withinBudget(timeLeft(20_000), () => retryWhileBusy(async (n) => (++calls < 4 ? CONTENDED : `done on ${n}`))),
    );
    expect(value).toBe('done on 4');
    expect(retries).toEqual({ contention: 3, throttling: 0 });
  });

  it('tries thrown throttling and conflicts again, by their kind', async () => {
    const thrown = [named('ThrottlingException'), cancelled('ThrottlingError'), named('TransactionConflictException')];
    const { value, retries } = await tallyingRetries(() =>
      withinBudget(timeLeft(20_000), () =>
        retryWhileBusy(async () => {
          const error = thrown.shift();
          if (error) throw error;
          return 'written';
        }),
      ),
    );
    expect(value).toBe('written');
    expect(retries).toEqual({ contention: 1, throttling: 2 });
  });

  it('throws any other error at once', async () => {
    let calls = 0;
    const failure = named('ValidationException');
    await expect(
      retryWhileBusy(async () => {
        calls += 1;
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(calls).toBe(1);
  });

  it('ends contention that outlasts the budget as WriteContention, never an outage', async () => {
    let calls = 0;
    const outcome = withinBudget(timeLeft(2_000), () =>
      retryWhileBusy(async () => {
        calls += 1;
        return CONTENDED;
      }),
    );
    await expect(outcome).rejects.toBeInstanceOf(WriteContention);
    expect(calls).toBeGreaterThan(3);
  });

  it("ends throttling that outlasts the budget with the table's own error", async () => {
    const throttled = named('ProvisionedThroughputExceededException');
    const outcome = withinBudget(timeLeft(600), () =>
      retryWhileBusy(async () => {
        throw throttled;
      }),
    );
    await expect(outcome).rejects.toBe(throttled);
  });

  it("ends throttling with the table's own error when the budget runs out inside a later attempt", async () => {
    const throttled = named('ProvisionedThroughputExceededException');
    let calls = 0;
    const outcome = withinBudget(timeLeft(5_000), () =>
      retryWhileBusy(async () => {
        calls += 1;
        if (calls === 1) throw throttled;
        throw Object.assign(new Error('aborted'), { name: 'AbortError', cause: new DeadlineExceeded() });
      }),
    );
    await expect(outcome).rejects.toBe(throttled);
    expect(calls).toBe(2);
  });

  it('leaves a budget cut after contention as the cut: the last attempt may have written', async () => {
    let calls = 0;
    const cut = new DeadlineExceeded();
    const outcome = withinBudget(timeLeft(5_000), () =>
      retryWhileBusy(async () => {
        calls += 1;
        if (calls === 1) return CONTENDED;
        throw cut;
      }),
    );
    await expect(outcome).rejects.toBe(cut);
  });

  it('makes no attempt it has no time for: with less left than a pause and an attempt, the first busy answer is the end', async () => {
    let calls = 0;
    const outcome = withinBudget(timeLeft((MIN_ATTEMPT_MS - 1) / 0.75), () =>
      retryWhileBusy(async () => {
        calls += 1;
        return CONTENDED;
      }),
    );
    await expect(outcome).rejects.toBeInstanceOf(WriteContention);
    expect(calls).toBe(1);
  });

  it('pauses a jittered, doubling time up to its cap, longer for throttling than for contention', async () => {
    const pauses: number[] = [];
    const draws = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1];
    let calls = 0;
    let last = 0;
    await withinBudget(timeLeft(60_000), () =>
      retryWhileBusy(
        async () => {
          const now = performance.now();
          if (calls > 0) pauses.push(now - last);
          last = now;
          calls += 1;
          return calls <= 7 ? CONTENDED : 'done';
        },
        () => draws.shift() ?? 1,
      ),
    );
    const expected = [1, 2, 4, 8, 16, 32, 64].map((factor) => Math.min(PACING.contention.maxMs, PACING.contention.firstMs * factor));
    for (const [index, pause] of pauses.entries()) expect(pause).toBeGreaterThanOrEqual(expected[index]! - 2);
    expect(PACING.throttling.firstMs).toBeGreaterThan(PACING.contention.firstMs);
    expect(PACING.throttling.maxMs).toBeGreaterThan(PACING.contention.maxMs);
  });
});
