import { AsyncLocalStorage } from 'node:async_hooks';
import type { HttpHandler, HttpHandlerOptions, HttpRequest, HttpResponse } from '@smithy/core/protocols';
import { streamCollector } from '@smithy/core/serde';
import { NodeHttpHandler } from '@smithy/node-http-handler';

/**
 * One time budget per invocation. Lambda stops a function at its timeout
 * whatever it is doing, and API Gateway then answers 502, possibly after a
 * write protocol ran half-way. So every backend call of an invocation is
 * bounded by what is left of the invocation's time, less a margin to answer:
 * when it is spent, the call fails as a backend timeout (DeadlineExceeded,
 * a 503 service_unavailable by isBackendUnavailable), in time for the
 * function to say so.
 *
 * The budget is carried by AsyncLocalStorage, so the stores need no extra
 * parameter, and the local server's concurrent requests (one process) each
 * see their own. Outside an invocation (scripts, the bench's direct calls)
 * there is no budget and calls are bounded by the clients' timeouts alone.
 */

/** What a Lambda invocation's context tells about time (the emulator gives the same). */
export interface InvocationTime {
  getRemainingTimeInMillis(): number;
}

/** The time of an invocation the local emulators start now, that Lambda would stop after `timeoutMs`. */
export function invocationTime(timeoutMs: number): InvocationTime {
  const endsAt = performance.now() + timeoutMs;
  return { getRemainingTimeInMillis: () => Math.max(0, Math.round(endsAt - performance.now())) };
}

/** Where an invocation's budget ends, on the monotonic clock (performance.now()). */
export interface Budget {
  /** Backend calls of the main path stop here. */
  callsEndAt: number;
  /** The protocols' fallbacks (see `inFallback`) may go on until here; then the function answers. */
  fallbacksEndAt: number;
}

/** Kept to answer after the last call: the response, its log line, the return to the runtime. */
export const ANSWER_SHARE = 0.1;
/** Kept for the fallbacks that follow a failed call (the orphan-file hand-off, "was the record stored?", the key's release). */
export const FALLBACK_SHARE = 0.15;

/**
 * The budget of an invocation that has `remainingMs` left at `now`: of a 20 s
 * function, backend calls until 15 s, fallbacks until 18 s, 2 s to answer.
 */
export function budgetFor(remainingMs: number, now: number): Budget {
  const left = Math.max(0, remainingMs);
  return {
    callsEndAt: now + left * (1 - ANSWER_SHARE - FALLBACK_SHARE),
    fallbacksEndAt: now + left * (1 - ANSWER_SHARE),
  };
}

interface Scope {
  budget: Budget;
  /** Inside a fallback: calls may use the reserve. */
  fallback: boolean;
}

const scopes = new AsyncLocalStorage<Scope>();

/** Runs an invocation's work within its budget (none when the caller gives no time, as a direct call does). */
export function withinBudget<T>(time: InvocationTime | undefined, work: () => Promise<T>): Promise<T> {
  if (!time) return work();
  return scopes.run({ budget: budgetFor(time.getRemainingTimeInMillis(), performance.now()), fallback: false }, work);
}

/**
 * Runs what a protocol does after a failed call to leave nothing behind: its
 * calls may use the reserve the main path left (FALLBACK_SHARE).
 */
export function inFallback<T>(work: () => Promise<T>): Promise<T> {
  const scope = scopes.getStore();
  return scope ? scopes.run({ ...scope, fallback: true }, work) : work();
}

/** Milliseconds a backend call may still take (0: none may start); undefined outside an invocation. */
export function remainingForCalls(now = performance.now()): number | undefined {
  const scope = scopes.getStore();
  if (!scope) return undefined;
  return remainingOf(scope.budget, scope.fallback, now);
}

export function remainingOf(budget: Budget, fallback: boolean, now: number): number {
  return Math.max(0, (fallback ? budget.fallbacksEndAt : budget.callsEndAt) - now);
}

/**
 * A backend call refused or cut because the invocation's budget is spent.
 * Not retryable by the SDK (it is none of the errors its retry strategy
 * retries), so no attempt follows; the API answers 503 service_unavailable.
 */
export class DeadlineExceeded extends Error {
  override readonly name = 'DeadlineExceeded';
  constructor() {
    super("The invocation's time budget for backend calls is spent");
  }
}

/**
 * The one place a client applies the budget: its HTTP handler. Each attempt
 * (the SDK's retry middleware calls `handle` once per attempt) is aborted
 * when the budget ends, its answer's body included (read here, inside the
 * attempt); an attempt that would start after it fails at once. Used by the
 * DynamoDB client (shared/dynamo/client.ts) and the S3 calls
 * (shared/s3/client.ts).
 */
export class BudgetBoundHandler implements HttpHandler<object> {
  constructor(private readonly inner: HttpHandler<object>) {}

  async handle(request: HttpRequest, options: HttpHandlerOptions = {}): Promise<{ response: HttpResponse }> {
    const remaining = remainingForCalls();
    if (remaining === undefined) return this.inner.handle(request, options);
    if (remaining <= 0) throw new DeadlineExceeded();
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new DeadlineExceeded()), remaining);
    const signal = options.abortSignal ? AbortSignal.any([options.abortSignal as AbortSignal, controller.signal]) : controller.signal;
    try {
      const { response } = await this.inner.handle(request, { ...options, abortSignal: signal });
      response.body = await untilAborted(bodyBytes(response.body), controller.signal);
      return { response };
    } catch (error) {
      if (controller.signal.aborted) throw controller.signal.reason;
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  updateHttpClientConfig(key: never, value: never): void {
    this.inner.updateHttpClientConfig(key, value);
  }

  httpHandlerConfigs(): object {
    return this.inner.httpHandlerConfigs();
  }

  destroy(): void {
    this.inner.destroy?.();
  }
}

/**
 * The HTTP transport of a backend client: the SDK's NodeHttpHandler with the
 * client's connect and answer timeouts, within the invocation's budget.
 */
export function boundedTransport(timeouts: { connectionTimeout: number; requestTimeout: number }): BudgetBoundHandler {
  return new BudgetBoundHandler(
    new NodeHttpHandler({
      connectionTimeout: timeouts.connectionTimeout,
      requestTimeout: timeouts.requestTimeout,
      // Without it the handler only logs a warning when requestTimeout passes and goes on waiting.
      throwOnRequestTimeout: true,
    }),
  );
}

/** All of an answer's body (a stream, or bytes already read). */
export function bodyBytes(body: unknown): Promise<Uint8Array> {
  if (body === undefined || body === null) return Promise.resolve(new Uint8Array());
  if (body instanceof Uint8Array) return Promise.resolve(body);
  if (typeof body === 'string') return Promise.resolve(Buffer.from(body, 'utf8'));
  return streamCollector(body as Parameters<typeof streamCollector>[0]);
}

/** The body's bytes, or the abort's reason if the budget ends first (the aborted request destroys the stream). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
