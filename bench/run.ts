import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { REPOSITORY_ROOT } from '../infra/local/server.js';
import { measureBundles } from './bundles.js';
import { measureColdStarts } from './cold-start.js';
import { type ConsumerFigures, measureConsumers } from './consumers.js';
import { type ContentionFigures, measureContention } from './contention.js';
import { measureCost } from './cost.js';
import { type EventFigures, measureEvents } from './event-feed.js';
import { seedFixture } from './fixture.js';
import { type LargeGroupFigures, measureLargeGroups } from './large-groups.js';
import { measureListCost } from './list-cost.js';
import { measurePreviews, type PreviewFigures } from './previews.js';
import { benchApp, startProcess } from './processes.js';
import { summariseProfiles } from './profile.js';
import { measureRealtime, type RealtimeFigures } from './realtime.js';
import { markdown, type Results } from './report.js';
import { resultsAfter } from './results-file.js';
import { measureSharing, type SharingFigures } from './sharing.js';
import { startStandIns } from './stand-ins.js';
import { round } from './stats.js';
import { measureUploadSessions } from './upload-sessions.js';
import { measureUploads, type UploadFigures } from './uploads.js';
import { CONCURRENCY, measureWarm, type WarmFigure, warmEndpoints } from './warm.js';

// `npm run bench [-- --runs 10 --seconds 5 --rounds 3 --sizes 1000,10000,100000 --invocations 20 --only bundles,cold,warm,uploads,sessions,growth,cost,sharing,events,realtime,consumers,groups,contention,previews --profile]`
const PARTS = [
  'bundles',
  'cold',
  'warm',
  'uploads',
  'sessions',
  'growth',
  'cost',
  'sharing',
  'events',
  'realtime',
  'consumers',
  'groups',
  'contention',
  'previews',
] as const;
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '10' },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    sizes: { type: 'string', default: '1000,10000,100000' },
    // Invocations per endpoint in the cost table.
    invocations: { type: 'string', default: '20' },
    // Some parts only, e.g. --only bundles,cold (cold, uploads and sessions need the bundles, and bundle them).
    only: { type: 'string', default: PARTS.join(',') },
    // Size of the upload session flow's file, and how many times it goes (each way).
    'session-mib': { type: 'string', default: '1024' },
    'session-rounds': { type: 'string', default: '2' },
    // Sharing: uploads whose fan-out is timed, the sides of the group, the attachments of the listed thread.
    'sharing-uploads': { type: 'string', default: '200' },
    'group-sides': { type: 'string', default: '1000' },
    'thread-attachments': { type: 'string', default: '10000' },
    // Events: writes timed from their answer to the receiver at EVENTS_FORWARD_URL, and by how many users; the writes of the feed whose pages are read.
    'forward-writes': { type: 'string', default: '200' },
    'forward-users': { type: 'string', default: '4' },
    'feed-writes': { type: 'string', default: '1000' },
    // Previews: 12-megapixel uploads timed until ready, and fresh processes per image for the renderer's duration and memory.
    'preview-uploads': { type: 'string', default: '20' },
    'preview-runs': { type: 'string', default: '3' },
    // Realtime: changes timed from their answer to their hint on a subscribed client; connections held at once, and for how long.
    'realtime-changes': { type: 'string', default: '200' },
    'realtime-connections': { type: 'string', default: '1000' },
    'realtime-hold': { type: 'string', default: '30' },
    // Consumers: the sides of the group one upload reaches, the uploads of the side whose removal is cleaned up.
    'consumer-group-sides': { type: 'string', default: '10000' },
    'consumer-side-uploads': { type: 'string', default: '10000' },
    // Groups: the sizes of the groups one upload goes into (large mode at each, small mode up to --group-small-up-to), and the push to a large group's connected members.
    'group-sizes': { type: 'string', default: '100,1000,10000' },
    'group-small-up-to': { type: 'string', default: '1000' },
    'push-members': { type: 'string', default: '1000' },
    'push-uploads': { type: 'string', default: '5' },
    // Contention: the writer's requests while the group's uploads (of --group-sides members) fan out into their feed.
    'contended-writes': { type: 'string', default: '300' },
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
const invocations = positive('invocations', values.invocations);
const parts = new Set(values.only.split(',').map((part) => part.trim()));
for (const part of parts) {
  if (!(PARTS as readonly string[]).includes(part)) {
    console.error(`--only takes ${PARTS.join(', ')}; got ${JSON.stringify(part)}`);
    process.exit(2);
  }
}
const wanted = (part: (typeof PARTS)[number]) => parts.has(part);
const sessionMebibytes = positive('session-mib', values['session-mib']);
const sessionRounds = positive('session-rounds', values['session-rounds']);
const sharingSettings = {
  uploads: positive('sharing-uploads', values['sharing-uploads']),
  groupSides: positive('group-sides', values['group-sides']),
  threadAttachments: positive('thread-attachments', values['thread-attachments']),
};
const eventSettings = {
  forwardWrites: positive('forward-writes', values['forward-writes']),
  forwardUsers: positive('forward-users', values['forward-users']),
  feedWrites: positive('feed-writes', values['feed-writes']),
};
const realtimeSettings = {
  changes: positive('realtime-changes', values['realtime-changes']),
  connections: positive('realtime-connections', values['realtime-connections']),
  holdSeconds: positive('realtime-hold', values['realtime-hold']),
};
const consumerSettings = {
  groupSides: positive('consumer-group-sides', values['consumer-group-sides']),
  sideUploads: positive('consumer-side-uploads', values['consumer-side-uploads']),
};
const largeGroupSettings = {
  sizes: values['group-sizes'].split(',').map((size) => positive('group-sizes', size)),
  smallUpTo: positive('group-small-up-to', values['group-small-up-to']),
  pushMembers: positive('push-members', values['push-members']),
  pushUploads: positive('push-uploads', values['push-uploads']),
};
const contentionSettings = {
  groupSides: positive('group-sides', values['group-sides']),
  writes: positive('contended-writes', values['contended-writes']),
};
const previewSettings = {
  uploads: positive('preview-uploads', values['preview-uploads']),
  runs: positive('preview-runs', values['preview-runs']),
};
const started = performance.now();
// Other work on the machine skews every figure: the run samples the load average to say how busy it was.
const loadSamples: number[] = [loadavg()[0]!];
const loadSampler = setInterval(() => loadSamples.push(loadavg()[0]!), 10_000).unref();
const step = (message: string) => console.error(`[${round((performance.now() - started) / 1000)} s] ${message}`);

const dynamodb = await startProcess<{ endpoint: string }>('dynamodb-process.ts');
const s3 = await startProcess<{ endpoint: string }>('s3-process.ts');
// What the handlers get (as on Lambda) and what this process's stores use for the reference calls.
const backends = { DYNAMODB_ENDPOINT: dynamodb.info.endpoint, S3_ENDPOINT: s3.info.endpoint };
// The handlers this process runs itself (cost) start a pending file's scan timer and a switching group's settling timer:
// queue stand-ins take them.
const standIns = await startStandIns();
const composition = benchApp({
  ...backends,
  SCAN_TIMER_QUEUE_URL: standIns.env.SCAN_TIMER_QUEUE_URL,
  THREAD_SETTLING_QUEUE_URL: standIns.env.THREAD_SETTLING_QUEUE_URL,
});
try {
  step('bundling every function with the stack settings');
  const bundles = wanted('bundles') || wanted('cold') || wanted('uploads') || wanted('sessions') ? await measureBundles() : undefined;

  step('seeding the fixture user');
  const fixture = await seedFixture(composition, 200, runs + 5);

  let coldStarts: Results['coldStarts'];
  if (wanted('cold')) {
    step(`cold starts: ${runs} fresh processes per bundle`);
    coldStarts = await measureColdStarts(bundles!, fixture, backends, runs);
  }

  let warm: WarmFigure[] | undefined;
  let uploads: UploadFigures | undefined;
  let serverProfile: Results['serverProfile'];
  if (wanted('warm') || wanted('uploads')) {
    step(`warm: ${rounds} rounds of ${seconds} s per endpoint and per backend call`);
    const profiles = join(REPOSITORY_ROOT, 'bench', 'profiles');
    if (values.profile) rmSync(profiles, { recursive: true, force: true });
    const server = await startProcess<{ url: string }>(
      'server-process.ts',
      { ...backends, AUTH_SECRET: fixture.authSecret },
      values.profile ? ['--cpu-prof', `--cpu-prof-dir=${profiles}`] : [],
    );
    try {
      if (wanted('warm')) warm = await measureWarm(server.info.url, fixture.token, warmEndpoints(fixture), seconds, rounds);
      if (wanted('uploads')) {
        step(`uploads: 1 and 4 MiB, ${runs} each through the API and as PutObject; peak memory of the upload handler`);
        uploads = await measureUploads(server.info.url, fixture, bundles!, backends, runs);
      }
    } finally {
      await server.stop();
    }
    serverProfile = values.profile ? summariseProfiles(profiles) : undefined;
  }

  let cost: Results['cost'];
  if (wanted('cost')) {
    step(`cost per request: ${invocations} invocations per endpoint, consumed capacity and S3 calls counted`);
    cost = await measureCost(composition, fixture, invocations);
  }

  let listCost: Results['listCost'];
  if (wanted('growth')) {
    step(`list cost at ${sizes.join(', ')} conversations`);
    listCost = await measureListCost(composition, sizes);
  }

  let uploadSessions: Results['uploadSessions'];
  if (wanted('sessions')) {
    step(
      `upload sessions: ${sessionMebibytes} MiB, ${sessionRounds} rounds through the sessions and by UploadPart; complete's peak memory`,
    );
    uploadSessions = await measureUploadSessions(fixture, bundles!, backends, sessionMebibytes, sessionRounds);
  }

  let sharing: SharingFigures | undefined;
  if (wanted('sharing')) {
    step('sharing: fan-out latency and cost, thread list and GET by id reads, through a server with its stream consumers');
    sharing = await measureSharing(composition, backends, fixture.authSecret, sharingSettings, step);
  }

  let events: EventFigures | undefined;
  if (wanted('events')) {
    step('events: commit-to-forward latency to a receiver at EVENTS_FORWARD_URL, items read per feed page');
    events = await measureEvents(composition, backends, fixture.authSecret, eventSettings, step);
    if (cost) events.outbox = cost.map(({ endpoint, outbox }) => ({ endpoint, ...outbox }));
  }

  let realtime: RealtimeFigures | undefined;
  if (wanted('realtime')) {
    step('realtime: commit-to-hint latency on a subscribed WebSocket client, connections held, the price of pushes');
    realtime = await measureRealtime(backends, fixture.authSecret, randomBytes(3).toString('hex'), realtimeSettings, step);
  }

  let consumers: ConsumerFigures | undefined;
  if (wanted('consumers')) {
    step(
      'consumers: an upload into a group of many sides, the cleanup of a side of many uploads, through a server with its stream consumers',
    );
    consumers = await measureConsumers(composition, backends, fixture.authSecret, consumerSettings, step);
  }

  let largeGroups: LargeGroupFigures | undefined;
  if (wanted('groups')) {
    step('groups: one upload into groups of many sides, large and small, beside a direct one; the push to a large group');
    largeGroups = await measureLargeGroups(composition, backends, fixture.authSecret, largeGroupSettings, step);
  }

  let contention: ContentionFigures | undefined;
  if (wanted('contention')) {
    step('contention: a user writing steadily while the uploads of a group of many fan out into their feed');
    contention = await measureContention(backends, fixture.authSecret, contentionSettings, step);
  }

  let previews: PreviewFigures | undefined;
  if (wanted('previews')) {
    step('previews: upload to ready through a server with its consumers and the previews queue; the renderer per image');
    previews = await measurePreviews(backends, fixture.authSecret, previewSettings, step);
  }

  const results: Results = {
    machine: {
      node: process.version,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      platform: `${platform()} ${release()}`,
      memoryGiB: round(totalmem() / 2 ** 30),
      date: new Date().toISOString(),
      loadAverage: {
        mean: round(loadSamples.reduce((sum, load) => sum + load, 0) / loadSamples.length, 2),
        max: round(Math.max(...loadSamples), 2),
      },
    },
    settings: { coldStartRuns: runs, warmSeconds: seconds, warmRounds: rounds, concurrency: CONCURRENCY, sizes },
    parts: PARTS.filter(wanted),
    ...(wanted('bundles') ? { bundles } : {}),
    ...(coldStarts ? { coldStarts } : {}),
    ...(warm ? { warm } : {}),
    ...(serverProfile ? { serverProfile } : {}),
    ...(listCost ? { listCost } : {}),
    ...(uploads ? { uploads } : {}),
    ...(cost ? { cost } : {}),
    ...(uploadSessions ? { uploadSessions } : {}),
    ...(sharing ? { sharing } : {}),
    ...(events ? { events } : {}),
    ...(realtime ? { realtime } : {}),
    ...(consumers ? { consumers } : {}),
    ...(largeGroups ? { largeGroups } : {}),
    ...(contention ? { contention } : {}),
    ...(previews ? { previews } : {}),
    durationSeconds: round((performance.now() - started) / 1000, 0),
  };
  const file = join(REPOSITORY_ROOT, 'bench', 'results.json');
  const previous = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Results) : undefined;
  writeFileSync(file, `${JSON.stringify(resultsAfter(previous, results, parts.size === PARTS.length), null, 2)}\n`);
  step('done: bench/results.json');
  console.log(markdown(results));
} finally {
  clearInterval(loadSampler);
  composition.destroy();
  await standIns.close();
  await s3.stop();
  await dynamodb.stop();
}
