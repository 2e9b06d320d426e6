import { MAX_SCAN_TIMEOUT_SECONDS } from '../config.js';
import type { SqsQueue } from '../sqs.js';
import type { Clock } from '../time.js';
import type { ScanTimer, ScanTimers } from './recorder.js';

/** Deliveries of a timer before its dead-letter queue (a backend failing each time). */
export const SCAN_TIMER_DELIVERIES = 5;

/** The timer function's timeout: one conditional settling, far under it. */
export const SCAN_TIMER_TIMEOUT_SECONDS = 30;

/** How long a delivered timer stays invisible: six times the function's timeout, as SQS advises for a Lambda mapping. */
export const SCAN_TIMER_VISIBILITY_SECONDS = 6 * SCAN_TIMER_TIMEOUT_SECONDS;

/** Timers per invocation: each a few small writes. */
export const SCAN_TIMER_BATCH_SIZE = 10;

/**
 * Scan timers as delayed SQS messages (docs/decisions.md, "The scan
 * timeout"): each sent with the time left until it is due, so SQS delivers
 * it to the timer's function (functions/scan-timeout.ts) then, however late
 * the fan-out sent it. A timer sent twice (a stream batch retried) comes
 * twice; its settling is conditional, so the second changes nothing.
 */
export class SqsScanTimers implements ScanTimers {
  constructor(
    private readonly queue: Pick<SqsQueue, 'send'>,
    private readonly clock: Clock,
  ) {}

  /** Each sent with the time left until it is due: at most SQS's 900 s, the longest timeout the configuration takes. */
  start(timers: readonly ScanTimer[]): Promise<void> {
    const now = this.clock();
    return this.queue.send(
      timers.map((timer) => ({
        body: JSON.stringify(timer),
        delaySeconds: Math.min(MAX_SCAN_TIMEOUT_SECONDS, Math.max(0, timer.due_at - now)),
      })),
    );
  }
}

/** A timer's message body, or undefined for anything else. */
export function scanTimerOf(body: string): ScanTimer | undefined {
  try {
    const { file_key, due_at } = JSON.parse(body) as Partial<ScanTimer>;
    return typeof file_key === 'string' && typeof due_at === 'number' ? { file_key, due_at } : undefined;
  } catch {
    return undefined;
  }
}
