import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import sharp from 'sharp';
import { FUNCTION_SETTINGS, PREVIEW_MEMORY_MB } from '../infra/declarations/function-settings.js';
import { REPOSITORY_ROOT } from '../infra/declarations/repository.js';
import { esbuildOptions } from '../infra/stack/bundling.js';
import { BUNDLE_DIRECTORY } from './bundles.js';
import { PRICES } from './cost.js';
import { Api, type Json, localServer } from './local-api.js';
import { multipartBody } from './multipart.js';
import { median, round, type Spread, spread } from './stats.js';

/**
 * Previews (docs/api.md, "Previews"): from an image upload's 201 until its
 * preview reads `ready`, through a local server with its stream consumers and
 * the previews queue (the fan-out queues it, the worker renders it), the
 * upload's own answer time for an image and for other bytes of the same size
 * (the preview is never in the request), and the worker's duration and peak
 * memory per image, each rendered in a process of its own.
 */
export interface PreviewFigures {
  /** 12-megapixel JPEG (4000 × 3000) uploads, one at a time. */
  uploadToReady: Spread & { uploads: number; megapixels: number; fileBytes: number; pollMs: number };
  /** The POST's answer, ms: the JPEG, and the same number of bytes that are no image. */
  uploadAnswer: { image: Spread; notImage: Spread };
  /** The renderer alone (shared/previews/render.ts), per image: median duration, peak RSS of its process. */
  worker: WorkerFigure[];
  /** Dollars per million previews of a 12 MP JPEG, by service (PreviewCost). */
  costPerMillion: PreviewCost;
}

/**
 * What one preview costs on AWS, at list prices (bench/cost.ts): the worker's
 * GB-seconds at PREVIEW_MEMORY_MB for the 12 MP render's measured duration
 * (Lambda bills from the invocation; the S3 and DynamoDB calls add their
 * latency, not counted here), and the requests counted from the code: S3 one
 * GET of the file and a PUT per thumbnail; DynamoDB the record's consistent
 * read, the feed head's read and the settling transaction (record, head,
 * event: three items at two write units each, transactional), and per other
 * reader the fan-out's delivery (its event, head and delivered-change record:
 * three more, one reader counted); SQS the fan-out's send (a tenth of a batch),
 * the mapping's receive and its delete.
 */
export interface PreviewCost {
  lambda: number;
  s3: number;
  dynamodb: number;
  sqs: number;
  total: number;
}

export interface WorkerFigure {
  image: string;
  megapixels: number;
  fileBytes: number;
  runs: number;
  durationMs: number;
  msPerMegapixel: number;
  /** The process's peak resident memory, MiB; and before the render (Node, the modules, the file read whole). */
  peakRssMiB: number;
  rssBeforeRenderMiB: number;
}

const POLL_MS = 25;
const DEADLINE_MS = 60_000;
const CATCH_UP_DEADLINE_MS = 30 * 60_000;
const run = promisify(execFile);

export async function measurePreviews(
  backends: { DYNAMODB_ENDPOINT: string; S3_ENDPOINT: string },
  authSecret: string,
  settings: { uploads: number; runs: number },
  step: (message: string) => void,
): Promise<PreviewFigures> {
  const photo = await photoOf(4000, 3000);
  const server = await localServer(backends, authSecret, { consumers: true });
  let uploadToReady: PreviewFigures['uploadToReady'];
  let uploadAnswer: PreviewFigures['uploadAnswer'];
  try {
    const api = new Api(server.url, authSecret);
    const user = await api.user(`preview-bench-${process.pid}-${Date.now()}`);
    // After the other parts the streams hold a backlog, and the previews queue hears of an upload only once the
    // fan-out reaches it: a first image's preview, unmeasured, says the consumers have caught up.
    step('previews: the stream consumers catch up with the records of the parts before');
    await readyAt(api, user, (await upload(api, user, photo, 'warm-up.jpg', 'image/jpeg')).id, CATCH_UP_DEADLINE_MS);
    step(`previews: ${settings.uploads} uploads of a 12-megapixel JPEG, each until its preview is ready`);
    const ready: number[] = [];
    const imageAnswers: number[] = [];
    const otherAnswers: number[] = [];
    const notImage = Buffer.alloc(photo.length, 0x20);
    // Each image's upload then, once its preview is ready (nothing else running), as many bytes that are no image:
    // the two answers side by side, in the same state of the server.
    for (let index = 0; index < settings.uploads; index += 1) {
      const { id, answerMs, answeredAt } = await upload(api, user, photo, 'photo.jpg', 'image/jpeg');
      imageAnswers.push(answerMs);
      ready.push((await readyAt(api, user, id)) - answeredAt);
      otherAnswers.push((await upload(api, user, notImage, 'photo.bin', 'application/octet-stream')).answerMs);
    }
    uploadToReady = { uploads: settings.uploads, megapixels: 12, fileBytes: photo.length, pollMs: POLL_MS, ...spread(ready) };
    uploadAnswer = { image: spread(imageAnswers), notImage: spread(otherAnswers) };
  } finally {
    await server.stop();
  }
  step(`previews: the renderer alone, ${settings.runs} fresh processes per image`);
  const worker = await workerFigures(settings.runs, photo);
  return { uploadToReady, uploadAnswer, worker, costPerMillion: previewCost(worker.find((figure) => figure.image.startsWith('JPEG 12'))!) };
}

async function upload(api: Api, user: Awaited<ReturnType<Api['user']>>, bytes: Buffer, filename: string, type: string) {
  const started = performance.now();
  const answer = await api.call(user, 'POST', '/v1/attachments', multipartBody({ filename, type, bytes }));
  const answeredAt = performance.now();
  if (answer.status !== 201) throw new Error(`upload: ${answer.status} ${JSON.stringify(answer.json)}`);
  return { id: answer.json.id as string, answerMs: answeredAt - started, answeredAt };
}

/** When the preview first reads ready (performance.now()); a failed preview or the deadline fails the bench. */
async function readyAt(api: Api, user: Awaited<ReturnType<Api['user']>>, id: string, deadlineMs = DEADLINE_MS): Promise<number> {
  const started = performance.now();
  for (;;) {
    const { json } = (await api.call(user, 'GET', `/v1/attachments/${id}`)) as { json: Json };
    const seen = performance.now();
    if (json.preview?.status === 'ready') return seen;
    if (json.preview?.status !== 'pending') throw new Error(`preview of ${id}: ${JSON.stringify(json.preview)}`);
    if (seen - started > deadlineMs) throw new Error(`preview of ${id} still pending after ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** A photo-like JPEG: flat colour with sensor-like noise, as phones save them (quality 85). */
function photoOf(width: number, height: number): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: '#6080a0', noise: { type: 'gaussian', mean: 128, sigma: 12 } } })
    .jpeg({ quality: 85 })
    .toBuffer();
}

/** The images the worker's memory is sized by: photos, a PNG (no shrink-on-load), and the largest the pixel limit lets through. */
async function workerFigures(runs: number, photo: Buffer): Promise<WorkerFigure[]> {
  const plain = (width: number, height: number) =>
    sharp({ create: { width, height, channels: 3, background: '#6080a0' } })
      .png()
      .toBuffer();
  const images: { image: string; megapixels: number; bytes: Buffer }[] = [
    { image: 'JPEG 1 MP (1152 × 864)', megapixels: 1, bytes: await photoOf(1152, 864) },
    { image: 'JPEG 12 MP (4000 × 3000)', megapixels: 12, bytes: photo },
    { image: 'JPEG 48 MP (8000 × 6000)', megapixels: 48, bytes: await photoOf(8000, 6000) },
    { image: 'PNG 12 MP (4000 × 3000)', megapixels: 12, bytes: await plain(4000, 3000) },
    { image: 'PNG 99 MP (11000 × 9000), the pixel limit', megapixels: 99, bytes: await plain(11_000, 9_000) },
  ];
  const directory = mkdtempSync(join(tmpdir(), 'preview-bench-'));
  // The child bundled as the functions are (sharp external, found in the repository's node_modules) and run by
  // plain node: a TypeScript loader's own compile would set the process's peak memory, not the render.
  const child = join(BUNDLE_DIRECTORY, 'preview-child', 'index.mjs');
  await build({
    ...esbuildOptions(),
    entryPoints: [join(REPOSITORY_ROOT, 'bench', 'preview-child.ts')],
    outfile: child,
    bundle: true,
    logLevel: 'silent',
  });
  try {
    const figures: WorkerFigure[] = [];
    for (const { image, megapixels, bytes } of images) {
      const file = join(directory, 'image');
      writeFileSync(file, bytes);
      const samples: { durationMs: number; peakRssKiB: number; rssBeforeRenderKiB: number }[] = [];
      for (let index = 0; index < runs; index += 1) {
        const { stdout } = await run(process.execPath, [child, file], { cwd: REPOSITORY_ROOT });
        samples.push(JSON.parse(stdout.trim().split('\n').at(-1)!));
      }
      const durationMs = median(samples.map((sample) => sample.durationMs));
      figures.push({
        image,
        megapixels,
        fileBytes: bytes.length,
        runs,
        durationMs: round(durationMs),
        msPerMegapixel: round(durationMs / megapixels),
        peakRssMiB: round(Math.max(...samples.map((sample) => sample.peakRssKiB)) / 1024),
        rssBeforeRenderMiB: round(median(samples.map((sample) => sample.rssBeforeRenderKiB)) / 1024),
      });
    }
    return figures;
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

function previewCost(twelveMegapixels: WorkerFigure): PreviewCost {
  const thumbnails = 2;
  const gbSeconds = (PREVIEW_MEMORY_MB / 1024) * (twelveMegapixels.durationMs / 1000);
  const lambda = PRICES.lambdaRequestPerMillion + gbSeconds * PRICES.lambdaGbSecond[FUNCTION_SETTINGS.architecture] * 1e6;
  const s3 = (PRICES.s3GetPerThousand + thumbnails * PRICES.s3PutPerThousand) * 1000;
  const readUnits = 2;
  const writeUnits = 3 * 2 + 3 * 2;
  const dynamodb = readUnits * PRICES.dynamoReadUnitPerMillion + writeUnits * PRICES.dynamoWriteUnitPerMillion;
  const sqs = (0.1 + 1 + 1) * PRICES.sqsRequestPerMillion;
  const costs = { lambda, s3, dynamodb, sqs };
  return {
    ...(Object.fromEntries(Object.entries(costs).map(([service, dollars]) => [service, round(dollars, 2)])) as typeof costs),
    total: round(lambda + s3 + dynamodb + sqs, 2),
  };
}
