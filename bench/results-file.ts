import type { Results } from './report.js';

/** A run of some parts (--only) whose figures replaced the full run's in bench/results.json. */
export interface PartRun {
  parts: string[];
  machine: Results['machine'];
  durationSeconds: number;
}

/**
 * What bench/results.json holds after a run: a full run replaces everything;
 * a run of some parts replaces those parts' figures and is named in
 * `partRuns`, so the file always holds each part's latest figures and says
 * which run measured them.
 */
export function resultsAfter(previous: Results | undefined, run: Results, full: boolean): Results {
  if (full || !previous) return run;
  const { machine, settings, parts, durationSeconds, partRuns, ...figures } = run;
  const replaced = new Set(parts);
  return {
    ...previous,
    ...figures,
    parts: [...previous.parts.filter((part) => !replaced.has(part)), ...parts],
    partRuns: [
      ...(previous.partRuns ?? []).map((earlier) => without(earlier, replaced)).filter((earlier) => earlier.parts.length > 0),
      { parts, machine, durationSeconds },
    ],
  };
}

const without = (run: PartRun, replaced: Set<string>): PartRun => ({ ...run, parts: run.parts.filter((part) => !replaced.has(part)) });
