import { type HttpHandler, type HttpHandlerOptions, HttpRequest, HttpResponse } from '@smithy/core/protocols';
import { isThrottlingError, isTransientError } from '@smithy/core/retry';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ANSWER_SHARE,
  budgetFor,
  DeadlineExceeded,
  FALLBACK_SHARE,
  inFallback,
  remainingForCalls,
  remainingOf,
  withinBudget,
} from '../../shared/deadline.js';
import { isBackendUnavailable } from '../../shared/http/unavailable.js';
import { BudgetBoundHandler } from '../../shared/transport.js';

const timeLeft = (ms: number) => ({ getRemainingTimeInMillis: () => ms });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('an invocation budget', () => {
  it('of a 20 s function: backend calls until 15 s, fallbacks until 18 s, 2 s to answer', () => {
    expect(budgetFor(20_000, 1_000)).toEqual({ callsEndAt: 16_000, fallbacksEndAt: 19_000 });
  });

  it('always ends calls before fallbacks, and fallbacks a tenth of the time before the timeout', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 900_000 }), fc.double({ min: 0, max: 1e9, noNaN: true }), (remaining, now) => {
        const { callsEndAt, fallbacksEndAt } = budgetFor(remaining, now);
        expect(now).toBeLessThanOrEqual(callsEndAt);
        expect(callsEndAt).toBeLessThanOrEqual(fallbacksEndAt);
        expect(now + remaining - fallbacksEndAt).toBeCloseTo(remaining * ANSWER_SHARE, 3);
        expect(fallbacksEndAt - callsEndAt).toBeCloseTo(remaining * FALLBACK_SHARE, 3);
      }),
    );
  });

  it('of an invocation already past its time is spent', () => {
    const budget = budgetFor(-5, 100);
    expect(remainingOf(budget, false, 100)).toBe(0);
    expect(remainingOf(budget, true, 100)).toBe(0);
  });

  it('leaves calls what is left until their end, never less than nothing', () => {
    const budget = budgetFor(20_000, 0);
    expect(remainingOf(budget, false, 10_000)).toBe(5_000);
    expect(remainingOf(budget, true, 10_000)).toBe(8_000);
    expect(remainingOf(budget, false, 17_000)).toBe(0);
    expect(remainingOf(budget, true, 25_000)).toBe(0);
  });

  it('is absent outside an invocation, and each concurrent invocation sees its own across awaits', async () => {
    expect(remainingForCalls()).toBeUndefined();
    const started = performance.now();
    const seen = await Promise.all(
      [4_000, 40_000].map((ms) =>
        withinBudget(timeLeft(ms), async () => {
          await sleep(5);
          // One instant for every read: what is left then depends on the scope, not on how fast the awaits went.
          const at = performance.now();
          const calls = remainingForCalls(at)!;
          const fallback = await inFallback(async () => {
            await sleep(5);
            return remainingForCalls(at)!;
          });
          return { ms, at, calls, fallback, after: remainingForCalls(at)! };
        }),
      ),
    );
    for (const { ms, at, calls, fallback, after } of seen) {
      // The budget began between `started` and `at`, however long that took.
      expect(calls).toBeLessThanOrEqual(ms * (1 - ANSWER_SHARE - FALLBACK_SHARE));
      expect(calls).toBeGreaterThanOrEqual(ms * (1 - ANSWER_SHARE - FALLBACK_SHARE) - (at - started));
      // The fallback has the reserve on top; it ends with the fallback.
      expect(fallback - calls).toBeCloseTo(ms * FALLBACK_SHARE, 6);
      expect(after).toBe(calls);
    }
    expect(remainingForCalls()).toBeUndefined();
  });
});

/** An HTTP handler that answers only when `answerAfterMs` passes, and records how it was called. */
function slowHandler(answerAfterMs: number) {
  const calls: HttpHandlerOptions[] = [];
  const handler: HttpHandler<object> = {
    handle: (_request, options = {}) => {
      calls.push(options);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => resolve({ response: new HttpResponse({ statusCode: 200, headers: {}, body: Buffer.from('ok') }) }),
          answerAfterMs,
        );
        (options.abortSignal as AbortSignal | undefined)?.addEventListener('abort', () => {
          clearTimeout(timer);
          reject(Object.assign(new Error('Request aborted'), { name: 'AbortError' }));
        });
      });
    },
    updateHttpClientConfig: () => {},
    httpHandlerConfigs: () => ({}),
  };
  return { handler, calls };
}

const request = () => new HttpRequest({ method: 'GET', hostname: 'example.com', path: '/' });

describe('a budget-bound HTTP handler', () => {
  it('passes a call outside an invocation through as it came', async () => {
    const { handler, calls } = slowHandler(1);
    const { response } = await new BudgetBoundHandler(handler).handle(request(), {});
    expect(response.statusCode).toBe(200);
    expect(calls).toEqual([{}]);
  });

  it('cuts an attempt that outlasts the budget with DeadlineExceeded', async () => {
    const { handler } = slowHandler(10_000);
    const outcome = withinBudget(timeLeft(200), () => new BudgetBoundHandler(handler).handle(request()));
    await expect(outcome).rejects.toBeInstanceOf(DeadlineExceeded);
  });

  it('answers within the budget with the body already read', async () => {
    const { handler } = slowHandler(1);
    const { response } = await withinBudget(timeLeft(5_000), () => new BudgetBoundHandler(handler).handle(request()));
    expect(Buffer.from(response.body as Uint8Array).toString()).toBe('ok');
  });

  it('starts no attempt once the budget is spent', async () => {
    const { handler, calls } = slowHandler(1);
    const outcome = withinBudget(timeLeft(0), () => new BudgetBoundHandler(handler).handle(request()));
    await expect(outcome).rejects.toBeInstanceOf(DeadlineExceeded);
    expect(calls).toEqual([]);
  });
});

describe('DeadlineExceeded', () => {
  it('is a backend unavailable (503) that the SDK retry strategy does not retry', () => {
    const error = new DeadlineExceeded();
    expect(isBackendUnavailable(error)).toBe(true);
    const asSdkError = error as Parameters<typeof isTransientError>[0];
    expect(isTransientError(asSdkError)).toBe(false);
    expect(isThrottlingError(asSdkError)).toBe(false);
  });
});
