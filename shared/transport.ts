import type { HttpHandler, HttpHandlerOptions, HttpRequest, HttpResponse } from '@smithy/core/protocols';
import { streamCollector } from '@smithy/core/serde';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { DeadlineExceeded, remainingForCalls } from './deadline.js';

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
