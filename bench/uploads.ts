import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPOSITORY_ROOT } from '../infra/local/server.js';
import { fileStore } from '../shared/app.js';
import { fileKey } from '../shared/files/keys.js';
import { newId } from '../shared/ids.js';
import { routes } from '../shared/routes.js';
import type { BundleFigure } from './bundles.js';
import { childResult } from './child-result.js';
import { proxyEvent } from './events.js';
import type { Fixture } from './fixture.js';
import { fileOf, multipartBody } from './multipart.js';
import { LOCAL_ENV } from './processes.js';
import { median, ratio, round } from './stats.js';

/**
 * Uploads: the time of one upload through the API (multipart POST to the
 * local server, which base64-wraps it as API Gateway does, parses it and puts
 * it to S3) beside a raw PutObject of the same bytes from this process through
 * the same file store; and the upload handler's peak memory per MiB.
 */
const MiB = 1024 * 1024;
const run = promisify(execFile);

export interface UploadFigure {
  mebibytes: number;
  apiMs: number;
  putObjectMs: number;
  /**
   * The same request to a path with no route: the gateway reads the whole
   * body and answers 404, so this is the client-to-gateway hop alone.
   */
  bodyTransferMs: number;
  /** API time over PutObject time. */
  ratio: number;
  /** Handler process: resident memory when idle, and its peak above that during the upload. */
  idleMiB: number;
  peakAboveIdleMiB: number;
  /** Of that, the peak while the runtime's part ran: reading the payload's JSON and parsing it into the event. */
  payloadMiB: number;
  /** peakAboveIdleMiB over the file's size in MiB. */
  peakPerMiB: number;
}

export interface UploadFigures {
  runs: number;
  sizes: UploadFigure[];
  /**
   * Extra peak memory per extra MiB, from the smallest to the largest file:
   * what the file itself costs, without the fixed cost of handling a request.
   */
  marginalPeakPerMiB: number;
}

export async function measureUploads(
  url: string,
  fixture: Fixture,
  bundles: BundleFigure[],
  env: Record<string, string>,
  runs: number,
): Promise<UploadFigures> {
  const files = fixture.composition.use(fileStore);
  const bundle = bundles.find((candidate) => candidate.name === 'UploadAttachment');
  if (!bundle) throw new Error('No UploadAttachment bundle: the route table has no upload route');
  const sizes: UploadFigure[] = [];
  for (const mebibytes of [1, 4]) {
    const file = fileOf(mebibytes * MiB);
    const { contentType, body } = multipartBody(file);
    const apiTimes: number[] = [];
    const putTimes: number[] = [];
    const transferTimes: number[] = [];
    const post = async (path: string) => {
      const response = await fetch(`${url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${fixture.token}`, 'content-type': contentType },
        body,
      });
      await response.arrayBuffer();
      return response.status;
    };
    // One discarded round, then API and PutObject alternate.
    for (let round = 0; round <= runs; round += 1) {
      const apiMs = await timed(async () => {
        const status = await post('/v1/attachments');
        if (status !== 201) throw new Error(`Upload of ${mebibytes} MiB answered ${status}`);
      });
      const transferMs = await timed(() => post('/v1/no-route'));
      const putMs = await timed(() => files.put(fileKey(fixture.userId, newId('att'), 'bench'), file.bytes, file.type));
      if (round > 0) {
        apiTimes.push(apiMs);
        putTimes.push(putMs);
        transferTimes.push(transferMs);
      }
    }
    const memory = await peakMemory(join(REPOSITORY_ROOT, bundle.file), fixture, env, mebibytes, Math.max(3, Math.ceil(runs / 3)));
    const apiMs = median(apiTimes);
    const putObjectMs = median(putTimes);
    sizes.push({
      mebibytes,
      apiMs: round(apiMs),
      putObjectMs: round(putObjectMs),
      bodyTransferMs: round(median(transferTimes)),
      ratio: ratio(apiMs, putObjectMs),
      idleMiB: round(memory.idleMiB),
      peakAboveIdleMiB: round(memory.aboveIdleMiB),
      payloadMiB: round(memory.payloadMiB),
      peakPerMiB: ratio(memory.aboveIdleMiB, mebibytes),
    });
  }
  const [smallest, largest] = [sizes[0]!, sizes[sizes.length - 1]!];
  const marginalPeakPerMiB = ratio(largest.peakAboveIdleMiB - smallest.peakAboveIdleMiB, largest.mebibytes - smallest.mebibytes);
  return { runs, sizes, marginalPeakPerMiB };
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

/** Median over fresh processes of the handler's peak resident memory above idle during one upload. */
async function peakMemory(bundleFile: string, fixture: Fixture, env: Record<string, string>, mebibytes: number, processes: number) {
  const route = routes.find((candidate) => candidate.name === 'UploadAttachment')!;
  const directory = mkdtempSync(join(tmpdir(), 'bench-upload-'));
  try {
    const event = (bytes: number) => JSON.stringify(proxyEvent({ route, userId: fixture.userId, multipart: multipartBody(fileOf(bytes)) }));
    const warmUp = join(directory, 'warm-up.json');
    const upload = join(directory, 'upload.json');
    writeFileSync(warmUp, event(1024));
    writeFileSync(upload, event(mebibytes * MiB));
    const idle: number[] = [];
    const above: number[] = [];
    const payload: number[] = [];
    for (let index = 0; index < processes; index += 1) {
      const { stdout } = await run(
        process.execPath,
        ['--expose-gc', join(REPOSITORY_ROOT, 'bench', 'upload-memory-child.mjs'), bundleFile, warmUp, upload],
        { env: { PATH: process.env.PATH ?? '', ...LOCAL_ENV, ...env, AUTH_SECRET: fixture.authSecret } },
      );
      const child = childResult<{ idleKiB: number; payloadKiB: number; peakKiB: number; warmUpStatus: number; status: number }>(stdout);
      if (child.status !== 201 || child.warmUpStatus !== 201)
        throw new Error(`Upload handler answered ${child.warmUpStatus}, ${child.status}`);
      idle.push(child.idleKiB / 1024);
      above.push((child.peakKiB - child.idleKiB) / 1024);
      payload.push((child.payloadKiB - child.idleKiB) / 1024);
    }
    return { idleMiB: median(idle), aboveIdleMiB: median(above), payloadMiB: median(payload) };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}
