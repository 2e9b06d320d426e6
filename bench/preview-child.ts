import { readFileSync } from 'node:fs';
import { renderPreview } from '../shared/previews/render.js';

// One preview rendered in a process of its own (bench/previews.ts): the file read whole as the worker reads
// it, then rendered; its duration and the resident memory, before and at its peak, on stdout. The peak is
// sampled every 2 ms while sharp works on libuv's threads: the kernel's maxrss would not do, since Linux keeps
// it across exec, so a child would report its parent's peak.
const file = process.argv[2]!;
const bytes = readFileSync(file);
const before = process.memoryUsage.rss();
let peak = before;
const sampler = setInterval(() => {
  peak = Math.max(peak, process.memoryUsage.rss());
}, 2);
const started = performance.now();
const rendered = await renderPreview(bytes);
const durationMs = performance.now() - started;
clearInterval(sampler);
peak = Math.max(peak, process.memoryUsage.rss());
process.stdout.write(
  `${JSON.stringify({ durationMs, peakRssKiB: peak / 1024, rssBeforeRenderKiB: before / 1024, width: rendered.width, height: rendered.height, thumbnails: rendered.thumbnails.length })}\n`,
);
