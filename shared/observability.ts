import { AsyncLocalStorage } from 'node:async_hooks';
import { Logger } from '@aws-lambda-powertools/logger';
import type { LogAttributes, LogItemExtraInput, LogItemMessage } from '@aws-lambda-powertools/logger/types';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

/**
 * Structured logs and CloudWatch metrics (EMF) with Powertools: one JSON log
 * line and one metrics record per request. Only the fields named here are
 * logged: never headers, bodies, tokens or file bytes.
 */
export const SERVICE_NAME = 'messaging-api';
export const METRICS_NAMESPACE = 'MessagingApi';

/**
 * What ties a line to its invocation: for a request its id, the function
 * (its route row's name, the stack's function id) and the caller; for a
 * stream batch the function and the batch's record ids.
 */
export type LogKeys = LogAttributes;

/**
 * The keys of the invocation running, held per async context rather than on
 * the logger (appendKeys): the local server runs many requests at once in one
 * process, where a key appended for one would land on another's lines; and a
 * context ends with its invocation, so no key reaches the lines of the next
 * one a reused Lambda instance runs.
 */
const invocationKeys = new AsyncLocalStorage<LogKeys>();

/** Runs `work` with `keys` (and those of the scope it runs in) on every line it logs, its late promises' included. */
export function withLogKeys<T>(keys: LogKeys, work: () => T): T {
  return invocationKeys.run({ ...invocationKeys.getStore(), ...keys }, work);
}

/** Powertools' Logger with the invocation's keys on every line; a line's own fields win over them. */
class InvocationLogger extends Logger {
  protected override createAndPopulateLogItem(logLevel: number, input: LogItemMessage, extraInput: LogItemExtraInput) {
    const keys = invocationKeys.getStore();
    // Powertools merges the extra items in order, whatever their kind: the keys first, so the line's own come after.
    return super.createAndPopulateLogItem(logLevel, input, keys ? ([keys, ...extraInput] as LogItemExtraInput) : extraInput);
  }

  protected override createLogger(options?: ConstructorParameters<typeof Logger>[0]): Logger {
    return new InvocationLogger(options);
  }
}

/**
 * An error as its name, message, stack and cause, nothing else: its other
 * fields (an SDK error's, say) can hold an item's attributes.
 */
function errorFields(_key: string, value: unknown): unknown {
  if (!(value instanceof Error)) return value;
  const { name, message, stack, cause } = value;
  return { name, message, stack, ...(cause === undefined ? {} : { cause: cause instanceof Error ? cause : String(cause) }) };
}

/** Pass a caught error as `error` (`logger.warn('…', { error })`): the line carries its name, message and stack. */
export const logger: Logger = new InvocationLogger({ serviceName: SERVICE_NAME, jsonReplacerFn: errorFields });
let metricsInstance: Metrics | undefined;
const metricsOf = () => (metricsInstance ??= new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME }));

/**
 * Whether this process still has its cold start to count. Lambda says how it
 * started an instance (AWS_LAMBDA_INITIALIZATION_TYPE); a process it did not
 * start (the local server) starts on demand, as Powertools' own count would
 * have it only if something wrote that variable, which nothing here does.
 */
let coldStartPending = (process.env.AWS_LAMBDA_INITIALIZATION_TYPE ?? 'on-demand') === 'on-demand';

/** Powertools' ColdStart metric (captureColdStartMetric's record), once per process. */
function countColdStart(metrics: Metrics): void {
  if (!coldStartPending) return;
  coldStartPending = false;
  const coldStart = metrics.singleMetric();
  const functionName = process.env.AWS_LAMBDA_FUNCTION_NAME?.trim();
  if (functionName) coldStart.addDimension('function_name', functionName);
  coldStart.addMetric('ColdStart', MetricUnit.Count, 1);
}

export interface RequestOutcome {
  requestId: string;
  /** The API Gateway resource path (`/v1/conversations/{id}`), not the raw path with ids. */
  route: string;
  method: string;
  status: number;
  latencyMs: number;
  userId?: string;
  /** Retries of a busy table the request made (shared/dynamo/busy-retry.ts), logged when there were any. */
  retries?: { contention: number; throttling: number };
}

export function recordRequest(outcome: RequestOutcome): void {
  logger.info('request', {
    request_id: outcome.requestId,
    route: outcome.route,
    method: outcome.method,
    status: outcome.status,
    latency_ms: outcome.latencyMs,
    user_id: outcome.userId ?? null,
    ...(outcome.retries && outcome.retries.contention + outcome.retries.throttling > 0 ? { retries: outcome.retries } : {}),
  });
  const metrics = metricsOf();
  // The first request of a Lambda instance is its cold start (per function); later calls do nothing.
  countColdStart(metrics);
  metrics.addDimension('route', `${outcome.method} ${outcome.route}`);
  metrics.addMetric('Requests', MetricUnit.Count, 1);
  metrics.addMetric(outcome.status >= 500 ? 'ServerErrors' : outcome.status >= 400 ? 'ClientErrors' : 'Successes', MetricUnit.Count, 1);
  metrics.addMetric('Latency', MetricUnit.Milliseconds, outcome.latencyMs);
  metrics.publishStoredMetrics();
}

/** A failure of ours (5xx): what happened, for the operator; the client only sees a generic body. */
export function recordFailure(requestId: string, error: unknown): void {
  logger.error('request failed', { request_id: requestId, error: error instanceof Error ? error : String(error) });
}
