import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

/**
 * Structured logs and CloudWatch metrics (EMF) with Powertools: one JSON log
 * line and one metrics record per request. Only the fields named here are
 * logged: never headers, bodies, tokens or file bytes.
 */
export const SERVICE_NAME = 'messaging-api';
export const METRICS_NAMESPACE = 'MessagingApi';

export const logger = new Logger({ serviceName: SERVICE_NAME });
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
  logger.error('request failed', {
    request_id: requestId,
    error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error),
  });
}
