import { describe, expect, it } from 'vitest';
import type { Results } from '../../../bench/report.js';
import { resultsAfter } from '../../../bench/results-file.js';

const machine = (date: string): Results['machine'] => ({ node: 'v20', cpus: 2, cpuModel: 'cpu', platform: 'linux', memoryGiB: 8, date });
const settings: Results['settings'] = { coldStartRuns: 10, warmSeconds: 5, warmRounds: 3, concurrency: 16, sizes: [1000] };
const run = (date: string, parts: string[], figures: Partial<Results>): Results =>
  ({ machine: machine(date), settings, parts, durationSeconds: 60, ...figures }) as Results;

const full = run('full', ['bundles', 'cold', 'groups'], { bundles: [], coldStarts: [], largeGroups: { runs: 'full' } as never });

describe('bench/results.json after a run', () => {
  it('a full run replaces everything, earlier part runs included', () => {
    const earlier = resultsAfter(full, run('part', ['groups'], { largeGroups: { runs: 'part' } as never }), false);
    const again = run('full again', ['bundles', 'cold', 'groups'], { bundles: [] });
    expect(resultsAfter(earlier, again, true)).toEqual(again);
  });

  it('a run of some parts replaces their figures, keeps the others, and names the run that measured them', () => {
    const after = resultsAfter(full, run('part', ['groups'], { largeGroups: { runs: 'part' } as never }), false);
    expect(after.largeGroups).toEqual({ runs: 'part' });
    expect(after.bundles).toBe(full.bundles);
    expect(after.machine.date).toBe('full');
    expect(after.parts).toEqual(['bundles', 'cold', 'groups']);
    expect(after.partRuns).toEqual([{ parts: ['groups'], machine: machine('part'), durationSeconds: 60 }]);
  });

  it('a later part run takes its parts from an earlier one, which keeps only what it still measured', () => {
    const first = resultsAfter(full, run('first', ['groups', 'cold'], { coldStarts: [], largeGroups: { runs: 'first' } as never }), false);
    const second = resultsAfter(first, run('second', ['groups'], { largeGroups: { runs: 'second' } as never }), false);
    expect(second.partRuns?.map((partRun) => [partRun.machine.date, partRun.parts])).toEqual([
      ['first', ['cold']],
      ['second', ['groups']],
    ]);
    const third = resultsAfter(second, run('third', ['cold'], { coldStarts: [] }), false);
    expect(third.partRuns?.map((partRun) => partRun.machine.date)).toEqual(['second', 'third']);
  });
});
