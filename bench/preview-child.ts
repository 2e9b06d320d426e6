import { readFileSync } from 'node:fs';
import { renderPreview } from '../shared/previews/render.js';

// One preview rendered in a process of its own (bench/previews.ts): the file read whole as the worker reads
// it, then rendered; its duration and the process's peak resident memory, before and after, on stdout.
const file = process.argv[2]!;
const bytes = readFileSync(file);
const before = process.resourceUsage().maxRSS;
const started = performance.now();
const rendered = await renderPreview(bytes);
const durationMs = performance.now() - started;
const after = process.resourceUsage().maxRSS;
process.stdout.write(
  `${JSON.stringify({ durationMs, peakRssKiB: after, rssBeforeRenderKiB: before, width: rendered.width, height: rendered.height, thumbnails: rendered.thumbnails.length })}\n`,
);
