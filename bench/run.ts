import { rmSync, writeFileSync } from 'node:fs';
import { cpus, platform, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { REPOSITORY_ROOT } from '../infra/local/server.js';
import { measureBundles } from './bundles.js';
import { measureColdStarts } from './cold-start.js';
import { seedFixture } from './fixture.js';
import { measureListCost } from './list-cost.js';
import { benchApp, startProcess } from './processes.js';
import { summariseProfiles } from './profile.js';
import { markdown, type Results } from './report.js';
import { round } from './stats.js';
import { measureUploadSessions } from './upload-sessions.js';
import { measureUploads, type UploadFigures } from './uploads.js';
import { CONCURRENCY, measureWarm, warmEndpoints, type WarmFigure } from './warm.js';

// `npm run bench [-- --runs 10 --seconds 5 --rounds 3 --sizes 1000,10000,100000 --profile]`
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '10' },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    sizes: { type: 'string', default: '1000,10000,100000' },
    // Size of the upload session flow's file, and how many times it goes (each way).
    'session-mib': { type: 'string', default: '1024' },
    'session-rounds': { type: 'string', default: '2' },
    // Writes a V8 CPU profile of the server process under bench/profiles/ (open in Chrome DevTools).
    profile: { type: 'boolean', default: false },
  },
});
const positive = (name: string, text: string) => {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value <= 0) {
    console.error(`--${name} must be a positive integer, got ${JSON.stringify(text)}`);
    process.exit(2);
  }
  return value;
};
const runs = positive('runs', values.runs);
const seconds = positive('seconds', values.seconds);
const rounds = positive('rounds', values.rounds);
const sizes = values.sizes.split(',').map((size) => positive('sizes', size));
const sessionMebibytes = positive('session-mib', values['session-mib']);
const sessionRounds = positive('session-rounds', values['session-rounds']);
const started = performance.now();
const step = (message: string) => console.error(`[${round((performance.now() - started) / 1000)} s] ${message}`);

const dynamodb = await startProcess<{ endpoint: string }>('dynamodb-process.ts');
const s3 = await startProcess<{ endpoint: string }>('s3-process.ts');
// What the handlers get (as on Lambda) and what this process's stores use for the reference calls.
const backends = { DYNAMODB_ENDPOINT: dynamodb.info.endpoint, S3_ENDPOINT: s3.info.endpoint };
const app = benchApp(backends);
try {
  step('bundling every function with the stack settings');
  const bundles = await measureBundles();

  step('seeding the fixture user');
  const fixture = await seedFixture(app, 200, runs + 5);

  step(`cold starts: ${runs} fresh processes per bundle`);
  const coldStarts = await measureColdStarts(bundles, fixture, backends, runs);

  step(`warm: ${rounds} rounds of ${seconds} s per endpoint and per backend call`);
  const profiles = join(REPOSITORY_ROOT, 'bench', 'profiles');
  if (values.profile) rmSync(profiles, { recursive: true, force: true });
  const server = await startProcess<{ url: string }>(
    'server-process.ts',
    { ...backends, AUTH_SECRET: fixture.authSecret },
    values.profile ? ['--cpu-prof', `--cpu-prof-dir=${profiles}`] : [],
  );
  let warm: WarmFigure[];
  let uploads: UploadFigures;
  try {
    warm = await measureWarm(server.info.url, fixture.token, warmEndpoints(fixture), seconds, rounds);
    step(`uploads: 1 and 4 MiB, ${runs} each through the API and as PutObject; peak memory of the upload handler`);
    uploads = await measureUploads(server.info.url, fixture, bundles, backends, runs);
  } finally {
    await server.stop();
  }
  const serverProfile = values.profile ? summariseProfiles(profiles) : undefined;

  step(`upload sessions: ${sessionMebibytes} MiB, ${sessionRounds} rounds through the sessions and by UploadPart; complete's peak memory`);
  const uploadSessions = await measureUploadSessions(fixture, bundles, backends, sessionMebibytes, sessionRounds);

  step(`list cost at ${sizes.join(', ')} conversations`);
  const listCost = await measureListCost(app, sizes);

  const results: Results = {
    machine: {
      node: process.version,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      platform: `${platform()} ${release()}`,
      memoryGiB: round(totalmem() / 2 ** 30),
      date: new Date().toISOString(),
    },
    settings: { coldStartRuns: runs, warmSeconds: seconds, warmRounds: rounds, concurrency: CONCURRENCY, sizes },
    bundles,
    coldStarts,
    warm,
    ...(serverProfile ? { serverProfile } : {}),
    listCost,
    uploads,
    uploadSessions,
    durationSeconds: round((performance.now() - started) / 1000, 0),
  };
  writeFileSync(join(REPOSITORY_ROOT, 'bench', 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  step('done: bench/results.json');
  console.log(markdown(results));
} finally {
  app.destroy();
  await s3.stop();
  await dynamodb.stop();
}
