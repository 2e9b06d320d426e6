import { performance } from 'node:perf_hooks';
import { type Check, CheckSkipped, type SmokeContext, type SmokeUser } from './check.js';
import { checks as stageChecks } from './checks/index.js';
import { type CleanupSettings, cleanup } from './cleanup.js';
import { StageClient, stageBase } from './client.js';
import { Ledger } from './ledger.js';

export interface SmokeSettings {
  /** The stage's root or its ApiUrl (`…/prod/v1`); see stageBase. */
  base: string;
  user: SmokeUser;
  other?: SmokeUser;
  /** Starts every name the run gives (runMarker()). */
  marker: string;
  origin?: string;
  cleanup?: Partial<CleanupSettings>;
  /** How long an upload shared with the second user may take to reach their side (the fan-out); default 60 s. */
  fanOutWithinMs?: number;
  /** The checks to run before the cleanup; default: all of checks/index.ts. */
  checks?: readonly Check[];
  /** Once aborted (Ctrl-C), the checks not yet started are skipped; the cleanup still runs. */
  signal?: AbortSignal;
}

export type Outcome = 'ok' | 'FAIL' | 'skip';

export interface CheckResult {
  name: string;
  outcome: Outcome;
  ms: number;
  /** A note when it passed, the reason when it failed or was skipped. */
  detail: string;
}

export interface SmokeReport {
  passed: boolean;
  /** Stopped before every check ran (settings.signal): not a pass, whatever ran. */
  interrupted: boolean;
  results: CheckResult[];
}

const DEFAULT_CLEANUP: CleanupSettings = { withinMs: 120_000, everyMs: 1_000 };
/** The fan-out reaches other sides within seconds; a minute leaves room for a cold start and a retried batch. */
const DEFAULT_FAN_OUT_WITHIN_MS = 60_000;

/**
 * Runs every check against the stage, each timed and each failure caught so
 * that the next one runs, then the cleanup, always (a check that failed
 * midway has written down what it made).
 */
export async function runSmoke(settings: SmokeSettings): Promise<SmokeReport> {
  const context: SmokeContext = {
    client: new StageClient(stageBase(settings.base)),
    user: settings.user,
    other: settings.other,
    marker: settings.marker,
    origin: settings.origin,
    made: new Ledger(),
    madeForOther: new Ledger(),
    fanOutWithinMs: settings.fanOutWithinMs ?? DEFAULT_FAN_OUT_WITHIN_MS,
  };
  const results: CheckResult[] = [];
  try {
    for (const check of settings.checks ?? stageChecks) {
      if (settings.signal?.aborted) results.push({ name: check.name, outcome: 'skip', ms: 0, detail: 'interrupted' });
      else results.push(await timed(check, context));
    }
  } finally {
    results.push(await timed(cleanup({ ...DEFAULT_CLEANUP, ...settings.cleanup }), context));
  }
  const interrupted = settings.signal?.aborted ?? false;
  return { passed: !interrupted && results.every((result) => result.outcome !== 'FAIL'), interrupted, results };
}

async function timed(check: Check, context: SmokeContext): Promise<CheckResult> {
  const started = performance.now();
  const result = (outcome: Outcome, detail: string): CheckResult => ({
    name: check.name,
    outcome,
    ms: Math.round(performance.now() - started),
    detail,
  });
  try {
    return result('ok', (await check.run(context)) ?? '');
  } catch (error) {
    if (error instanceof CheckSkipped) return result('skip', error.message);
    return result('FAIL', error instanceof Error ? error.message : String(error));
  }
}
