import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Where a process spent its busy time, from the V8 CPU profile `--cpu-prof`
 * wrote: self time grouped by package (node_modules), Node built-in module
 * or source file, idle excluded.
 */
export interface ProfileShare {
  where: string;
  percent: number;
}

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string } }[];
  samples: number[];
  timeDeltas: number[];
}

/** The main thread's profile is the largest file (tsx adds a small loader thread's). */
export function summariseProfiles(directory: string, top = 12): ProfileShare[] {
  const files = readdirSync(directory).filter((name) => name.endsWith('.cpuprofile'));
  const largest = files.map((name) => ({ name, size: readFileSync(join(directory, name)).length })).sort((a, b) => b.size - a.size)[0];
  if (!largest) return [];
  const profile = JSON.parse(readFileSync(join(directory, largest.name), 'utf8')) as CpuProfile;
  const selfTime = new Map<number, number>();
  for (const [index, id] of profile.samples.entries()) selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0));
  const byPlace = new Map<string, number>();
  for (const node of profile.nodes) {
    const where = placeOf(node.callFrame);
    if (where === '(idle)') continue;
    byPlace.set(where, (byPlace.get(where) ?? 0) + (selfTime.get(node.id) ?? 0));
  }
  const busy = [...byPlace.values()].reduce((sum, time) => sum + time, 0);
  return [...byPlace.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([where, time]) => ({ where, percent: Number(((time / busy) * 100).toFixed(1)) }));
}

function placeOf({ functionName, url }: { functionName: string; url: string }): string {
  const dependency = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (dependency) return dependency[1]!;
  if (url.startsWith('node:')) return url;
  if (url === '') return `(${functionName})`.replace('((', '(').replace('))', ')');
  return url.replace(/^.*?\/(infra|shared|functions|bench)\//, '$1/');
}
