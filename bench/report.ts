import { FUNCTION_SETTINGS } from '../infra/declarations/function-settings.js';
import type { BundleFigure } from './bundles.js';
import type { ColdStartFigure } from './cold-start.js';
import type { ConsumerFigures } from './consumers.js';
import type { ContentionFigures } from './contention.js';
import { type CostFigure, multipartDollarsPerGiB, PRICE_LIST, PRICES, scanDollarsPerMillion } from './cost.js';
import type { EventFigures } from './event-feed.js';
import type { PreviewFigures } from './previews.js';

const FUNCTION_NOTE = `${FUNCTION_SETTINGS.memoryMb} MB ${FUNCTION_SETTINGS.architecture}`;

import type { LargeGroupFigures } from './large-groups.js';
import type { GrowthFigures } from './list-cost.js';
import type { ProfileShare } from './profile.js';
import { REALTIME_PRICES, REALTIME_TARGETS, type RealtimeFigures } from './realtime.js';
import type { PartRun } from './results-file.js';
import { SHARING_TARGETS, type SharingFigures } from './sharing.js';
import type { SessionFlowFigures } from './upload-sessions.js';
import type { UploadFigures } from './uploads.js';
import type { WarmFigure } from './warm.js';

/** What `npm run bench` measured: bench/results.json holds the last full run, with later runs of some parts (`partRuns`) in place of its figures. */
export interface Results {
  machine: {
    node: string;
    cpus: number;
    cpuModel: string;
    platform: string;
    memoryGiB: number;
    date: string;
    loadAverage?: { mean: number; max: number };
  };
  settings: { coldStartRuns: number; warmSeconds: number; warmRounds: number; concurrency: number; sizes: number[] };
  /** The parts run (--only); each figure below is there when its part ran. */
  parts: string[];
  /** Runs of some parts since the full run, whose figures replaced its own (bench/results-file.ts). */
  partRuns?: PartRun[];
  bundles?: BundleFigure[];
  coldStarts?: ColdStartFigure[];
  warm?: WarmFigure[];
  /** With --profile: the server process's busy time during the warm runs and uploads, by where it was spent. */
  serverProfile?: ProfileShare[];
  listCost?: GrowthFigures;
  uploads?: UploadFigures;
  cost?: CostFigure[];
  uploadSessions?: SessionFlowFigures;
  sharing?: SharingFigures;
  events?: EventFigures;
  realtime?: RealtimeFigures;
  consumers?: ConsumerFigures;
  largeGroups?: LargeGroupFigures;
  contention?: ContentionFigures;
  previews?: PreviewFigures;
  durationSeconds: number;
}

export const TARGETS = {
  coldStartRatio: 1.3,
  warmGetRatio: 0.7,
  /** A page of 10 attachments (ten file_url signed) against a page of 10 conversations, by throughput. */
  attachmentListRatio: 1.2,
  uploadRatio: 2,
  uploadMemoryPerFileByte: 4,
  sessionRatio: 0.95,
};

const kb = (bytes: number) => `${(bytes / 1000).toFixed(1)} KB`;
const mark = (ok: boolean) => (ok ? '✓' : '✗ miss');
const row = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
const table = (head: string[], rows: (string | number)[][]) => [row(head), row(head.map(() => '---')), ...rows.map(row)].join('\n');

const runLine = (machine: Results['machine'], durationSeconds: number) =>
  `Node ${machine.node}, ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGiB} GiB, ${machine.platform}; ${machine.date}; ` +
  `whole run ${durationSeconds} s` +
  (machine.loadAverage ? `; 1-minute load average ${machine.loadAverage.mean} on average, ${machine.loadAverage.max} at most.` : '.');

export function markdown(results: Results): string {
  const { machine, settings } = results;
  const sections: string[] = [];
  sections.push(`${runLine(machine, results.durationSeconds)}`);
  for (const run of results.partRuns ?? [])
    sections.push(`Measured again (${run.parts.join(', ')}): ${runLine(run.machine, run.durationSeconds)}`);

  if (results.bundles) sections.push(bundleSection(results.bundles, results.coldStarts, settings.coldStartRuns));
  if (results.warm) sections.push(warmSection(results.warm, settings, results.serverProfile));
  if (results.listCost) sections.push(growthSection(results.listCost));
  if (results.uploads) sections.push(uploadsSection(results.uploads));
  if (results.uploadSessions) sections.push(uploadSessionsSection(results.uploadSessions));
  if (results.sharing) sections.push(sharingSection(results.sharing));
  if (results.realtime) sections.push(realtimeSection(results.realtime));
  if (results.events) sections.push(eventsSection(results.events));
  if (results.consumers) sections.push(consumersSection(results.consumers));
  if (results.largeGroups) sections.push(largeGroupsSection(results.largeGroups));
  if (results.contention) sections.push(contentionSection(results.contention));
  if (results.previews) sections.push(previewsSection(results.previews));
  if (results.cost) sections.push(costSection(results.cost));
  return sections.join('\n\n');
}

function bundleSection(bundles: BundleFigure[], coldStarts: ColdStartFigure[] | undefined, runs: number): string {
  const cold = new Map((coldStarts ?? []).map((figure) => [figure.name, figure]));
  return (
    `### Bundles and cold start\n\nCold start: median of ${runs} fresh \`node\` processes, ms from process start ` +
    `(performance.timeOrigin) to the handler's first response against DynamoDB Local; the reference is a bare handler with ` +
    `one DynamoDBClient and one GetItem, bundled the same way. Targets: bundle ≤ 300 KB (authorizer ≤ 100 KB), cold ≤ ${TARGETS.coldStartRatio} × reference.\n\n` +
    table(
      ['Function', 'Minified', 'Gzipped', 'Size target', 'Module loaded (ms)', 'First response (ms)', '× reference', 'Cold target'],
      bundles.map((bundle) => {
        const figure = cold.get(bundle.name);
        return [
          bundle.name,
          kb(bundle.minifiedBytes),
          kb(bundle.gzippedBytes),
          mark(bundle.withinLimit),
          figure?.loadedMs ?? '–',
          figure?.firstResponseMs ?? '–',
          figure?.ratio ?? '–',
          // The authorizer has no cold target of its own: it stays where it is (0.4 × the reference).
          figure ? mark(figure.ratio <= TARGETS.coldStartRatio) : '–',
        ];
      }),
    ) +
    largestInputs(bundles)
  );
}

function warmSection(warm: WarmFigure[], settings: Results['settings'], serverProfile: ProfileShare[] | undefined): string {
  const rate = (endpoint: string) => warm.find((figure) => figure.endpoint === endpoint)?.api.requestsPerSecond;
  const conversationsPage = rate('GET /v1/conversations');
  const attachmentsPage = rate('GET /v1/attachments');
  const listLine =
    conversationsPage && attachmentsPage
      ? `\n\nA page of 10 attachments costs ${(conversationsPage / attachmentsPage).toFixed(2)} × a page of 10 conversations ` +
        `(req/s ${attachmentsPage} against ${conversationsPage}; target ≤ ${TARGETS.attachmentListRatio} ×: ${mark(conversationsPage / attachmentsPage <= TARGETS.attachmentListRatio)}).`
      : '';
  return (
    `### Warm latency and throughput\n\nautocannon, ${settings.concurrency} connections, ${settings.warmSeconds} s per endpoint, loopback, ` +
    `server in its own process, DynamoDB Local in another; beside each, the backend call the endpoint makes, through the same store ` +
    `at the same concurrency for the same time, alternating over ${settings.warmRounds} rounds (medians shown). Target: GET conversation and GET attachment ≥ ${TARGETS.warmGetRatio * 100} % of the GetItem rate, zero errors.\n\n` +
    table(
      ['Endpoint', 'p50 (ms)', 'p99 (ms)', 'req/s', 'Errors', 'Backend call', 'Backend p50 (ms)', 'Backend calls/s', 'API / backend'],
      warm.map((figure) => [
        figure.endpoint,
        figure.api.p50Ms,
        figure.api.p99Ms,
        figure.api.requestsPerSecond,
        figure.api.errors,
        figure.backendCall,
        figure.backend.p50Ms,
        figure.backend.requestsPerSecond,
        `${Math.round(figure.ratio * 100)} %`,
      ]),
    ) +
    listLine +
    (serverProfile
      ? `\n\nServer process busy time during the warm runs and the uploads (--profile, self time): ` +
        serverProfile.map((share) => `${share.where} ${share.percent} %`).join(', ') +
        '.'
      : '')
  );
}

function growthSection(listCost: GrowthFigures): string {
  const sizes = listCost.sizes;
  return (
    `### Cost as data grows\n\nItems read (ScannedCount summed over the page's queries) for one page of 10, ` +
    `one user with ${sizes.map((size) => size.toLocaleString('en')).join(' / ')} conversations, 5 % each muted, archived, pinned and in a group ` +
    `(a third of the mutes timed and still on, a third ended a minute ago and not yet written back), a tenth of the half with activity unread ` +
    `(seeded in ${sizes.map((size) => `${listCost.seedSeconds[size]} s`).join(' / ')}). ` +
    `Target: ≤ limit + 1 = 11 for no filter and one indexed filter, flat; the first muted list after mutes ended also reads those once ` +
    `(bound: 11 + the mutes that ended since); a pair reads at most the chosen index's set.\n\n` +
    table(
      [
        'Filter',
        'Index',
        ...sizes.map((size) => `Read @ ${size.toLocaleString('en')}`),
        `Bound @ ${sizes.at(-1)!.toLocaleString('en')}`,
        'Target',
      ],
      listCost.pages.map((page) => [
        page.filter,
        page.index,
        ...sizes.map((size) => `${page.itemsRead[size]}${page.queries[size]! > 1 ? ` (${page.queries[size]} queries)` : ''}`),
        page.bound[sizes.at(-1)!]!,
        mark(sizes.every((size) => page.itemsRead[size]! <= page.bound[size]!)),
      ]),
    )
  );
}

const dollars = (value: number) => `$${value.toFixed(3)}`;

function costSection(cost: CostFigure[]): string {
  const s3Column = (figure: CostFigure) =>
    Object.entries(figure.s3Calls)
      .map(([name, count]) => `${count === 1 ? '' : `${count} × `}${name.replace(/Command$/, '')}`)
      .join(', ') || '–';
  const session = (partMiB: number) => {
    const { requests, dollars: perGiB } = multipartDollarsPerGiB(partMiB * 2 ** 20);
    return `${partMiB} MiB parts: ${requests.toLocaleString('en')} PUT-class requests, $${perGiB} per GiB`;
  };
  return (
    `### Cost per request\n\nUSD per million requests of each endpoint, from what each request did in this run ` +
    `(${cost[0]?.invocations ?? 0} invocations each, after one uncounted): API Gateway REST per request; WAF per request (the size guard's ` +
    `web ACL; its $8 a month of web ACL and rule fees are not per request); Lambda per request plus ` +
    `GB-seconds from the handler's duration here, each invocation rounded up to the ms, at ${FUNCTION_NOTE}; DynamoDB read and write ` +
    `request units summed from ReturnConsumedCapacity of every call the endpoint made; S3 by operation (file_url is signed in the ` +
    `function: no request). Prices: ${PRICE_LIST} (REST $${PRICES.apiGatewayRestPerMillion}/M, WAF $${PRICES.wafRequestPerMillion}/M, Lambda $${PRICES.lambdaRequestPerMillion}/M + ` +
    `$${PRICES.lambdaGbSecond.arm64}/GB-s arm64, DynamoDB $${PRICES.dynamoReadUnitPerMillion}/M RRU and $${PRICES.dynamoWriteUnitPerMillion}/M WRU, ` +
    `S3 $${PRICES.s3PutPerThousand}/1,000 PUT, $${PRICES.s3GetPerThousand}/1,000 GET, DELETE free). Not included: the authorizer ` +
    `(API Gateway caches its answer per token for 300 s), CloudWatch logs and metrics, data transfer, storage. ` +
    `"+ fan-out" rows: the upload, then the fan-out function invoked with the upload's stream record, its own Lambda invocation ` +
    `(one per upload: the most there can be; the event source mapping hands it up to 100 records at a time under load) and its own ` +
    `DynamoDB units; reading the stream is free for Lambda triggers. Each upload a second after the one before, so every fan-out ` +
    `moves the sides forward. "Outbox" columns: what the events table took of RRU, WRU and the DynamoDB dollars. Every write reads its ` +
    `user's feed head (one strongly consistent read, 1 RRU, as reported) and puts in its transaction the head's conditional update and ` +
    `one Put per event, which DynamoDB also writes into the feed's two local indexes; a transactional write costs 2 WRU per item per KB ` +
    `(rounded up per item), and the index writes are counted at that rate too (the upper bound), so an event under 1 KB adds 6 WRU to ` +
    `the head's 2. Those write units are counted by that rule from the items each committed transaction sent (bench/item-size.ts), ` +
    `in the WRU column too in place of DynamoDB Local's figure for the events table, which does not add up a transaction's items ` +
    `(three 100-byte Puts in one transaction are reported as 2 WRU).\n\n` +
    table(
      [
        'Endpoint',
        'DynamoDB calls',
        'RRU',
        'WRU',
        'Outbox RRU / WRU',
        'S3 calls',
        'Handler p50 (ms)',
        'Billed (ms)',
        'API Gateway',
        'WAF',
        'Lambda',
        'DynamoDB',
        'Outbox',
        'S3',
        'Total per million',
      ],
      cost.map((figure) => [
        figure.endpoint,
        figure.dynamoCalls,
        figure.readUnits,
        figure.writeUnits,
        `${figure.outbox.readUnits} / ${figure.outbox.writeUnits}`,
        s3Column(figure),
        figure.durationMs,
        figure.billedMs,
        dollars(figure.dollarsPerMillion.apiGateway),
        dollars(figure.dollarsPerMillion.waf),
        dollars(figure.dollarsPerMillion.lambda),
        dollars(figure.dollarsPerMillion.dynamodb),
        dollars(figure.outbox.dollarsPerMillion),
        dollars(figure.dollarsPerMillion.s3),
        `**${dollars(figure.dollarsPerMillion.total)}**`,
      ]),
    ) +
    `\n\nUpload sessions move the bytes straight to S3 (CreateMultipartUpload, one UploadPart per part, CompleteMultipartUpload, ` +
    `all PUT-class): ${session(8)}; ${session(64)}.\n\n` +
    scanCostTable(cost)
  );
}

/** GuardDuty's price of scanning each file (computed, not measured) beside what the upload itself cost in this run. */
function scanCostTable(cost: CostFigure[]): string {
  const upload = cost.find((figure) => figure.endpoint.startsWith('POST /v1/attachments (64 KiB, into'));
  const row = (label: string, bytes: number, own: string) => {
    const scan = scanDollarsPerMillion(bytes);
    return [label, dollars(scan.objects), dollars(scan.scanned), dollars(scan.s3), `**${dollars(scan.total)}**`, own];
  };
  return (
    `**Scanning** (GuardDuty Malware Protection for S3, per million files, at $${PRICES.guardDutyPerThousandObjects} per 1,000 objects ` +
    `evaluated and $${PRICES.guardDutyPerGb} per GB scanned, plus its S3 GET and PutObjectTagging on the bucket's bill; computed from ` +
    `the price list, not measured; the recorder's invocation, its writes and the members' events are not in it). A reader other ` +
    `than the uploader waits for the scan's result: AWS publishes no latency for it (locally LOCAL_SCAN_DELAY_MS, 1 s).\n\n` +
    table(
      ['File', 'Objects evaluated', 'Data scanned', 'S3 requests', 'Scan per million', 'The upload itself per million (this run)'],
      [
        row('64 KiB (POST /v1/attachments)', 64 * 1024, upload ? dollars(upload.dollarsPerMillion.total) : '–'),
        row('4 MiB (POST /v1/attachments, its limit)', 4 * 2 ** 20, '–'),
        row(
          '1 GiB (upload session)',
          2 ** 30,
          `${dollars(multipartDollarsPerGiB(64 * 2 ** 20).dollars * 1e6)} (64 MiB parts, S3 requests only)`,
        ),
      ],
    )
  );
}

function sharingSection(sharing: SharingFigures): string {
  const { fanOut, group } = sharing;
  const list = (counts: Record<string, number>) =>
    Object.entries(counts)
      .map(([name, count]) => `${name} ${count}`)
      .join(', ') || 'none';
  const thread = sharing.threadList;
  return (
    `### Sharing\n\nOn the local server with its stream consumers (the fan-out runs from the attachments table's stream, read every 100 ms when idle), ` +
    `every DynamoDB call of the server counted by a proxy. Fan-out latency: ${fanOut.uploads} uploads of 4 KiB, one at a time, each into a ` +
    `conversation with a new contact, timed from the upload's 201 until the contact's GET /v1/conversations?contact_id=<uploader>&unread=true ` +
    `(asked every ${fanOut.pollMs} ms) shows the side. Target: p95 ≤ ${SHARING_TARGETS.fanOutP95Ms} ms.\n\n` +
    table(
      ['Upload to', 'Uploads', 'p50 (ms)', 'p95 (ms)', 'Max (ms)', 'Target'],
      [
        ...fanOut.byCase.map((figure) => [figure.case, figure.uploads, figure.p50Ms, figure.p95Ms, figure.maxMs, '']),
        ['all', fanOut.uploads, fanOut.p50Ms, fanOut.p95Ms, fanOut.maxMs, mark(fanOut.p95Ms <= SHARING_TARGETS.fanOutP95Ms)],
      ],
    ) +
    `\n\nA group of ${group.sides.toLocaleString('en')} sides (each member's POST, ${group.seedSeconds} s, 8 in flight), one upload: half the sides show it ` +
    `${group.halfSidesMs} ms after the 201, the last ${group.lastSideMs} ms after (sides read every ${group.pollMs} ms). DynamoDB calls of the upload and its fan-out: ` +
    `${list(group.operations)}; ${group.itemsWritten.toLocaleString('en')} items written per upload (the request alone: ${list(group.requestOperations)}). ` +
    `The stream poller's own calls meanwhile: ${list(group.pollerCalls)}.\n\n` +
    `Items read by a list page (ScannedCount of its queries) and the request's other reads, a direct thread of two members each holding a side ` +
    `(records written straight into the table, half uploaded by each). Target: the thread's query reads limit + 1.\n\n` +
    table(
      ['List', 'Attachments in the thread', 'Limit', 'Returned', 'Items read', 'Queries', 'Other reads', 'Target'],
      thread.map((figure) => [
        figure.list,
        figure.threadSize.toLocaleString('en'),
        figure.limit,
        figure.returned,
        figure.itemsRead,
        figure.queries,
        figure.otherReads,
        mark(figure.itemsRead <= figure.limit + 1),
      ]),
    ) +
    `\n\nGET /v1/attachments/:id, DynamoDB reads of one request by reader. Target: ≤ ${SHARING_TARGETS.memberGetReads} for a member.\n\n` +
    table(
      ['Reader', 'Status', 'Reads', 'Calls', 'Target'],
      sharing.memberReads.map((figure) => [
        figure.reader,
        figure.status,
        figure.reads,
        list(figure.operations),
        mark(figure.reads <= SHARING_TARGETS.memberGetReads),
      ]),
    )
  );
}

function consumersSection({ group, sideCleanup }: ConsumerFigures): string {
  const list = (counts: Record<string, number>) =>
    Object.entries(counts)
      .map(([name, count]) => `${name} ${count.toLocaleString('en')}`)
      .join(', ') || 'none';
  const units = (figure: { readUnits: number; writeUnits: number; dollars: number }) =>
    `${figure.readUnits.toLocaleString('en')} RRU and ${figure.writeUnits.toLocaleString('en')} WRU ($${figure.dollars} on demand)`;
  return (
    `### Stream consumers at size

On the local server with its stream pollers, every DynamoDB call of its Composition metered (units as reported, the events ` +
    `table's transactional writes by AWS's rule). A group of ${group.sides.toLocaleString('en')} sides (seeded by BatchWriteItem in ${group.seedSeconds} s), ` +
    `one upload: half the sides show it ${group.halfSidesMs} ms after the 201, the last (${group.reached.toLocaleString('en')} of ` +
    `${(group.sides - 1).toLocaleString('en')}) ${group.lastSideMs} ms after (sides read every ${group.pollMs} ms); ${units(group)}; calls: ${list(group.calls)}.

` +
    `A side of ${sideCleanup.uploads.toLocaleString('en')} uploads and their files (seeded in ${sideCleanup.seedSeconds} s), deleted: its records gone ` +
    `${sideCleanup.recordsGoneMs} ms after the DELETE's 200, its files ${sideCleanup.filesGoneMs} ms after (read every ${sideCleanup.pollMs} ms); ` +
    `${units(sideCleanup)}; calls: ${list(sideCleanup.calls)}; S3: ${list(sideCleanup.s3Calls)}.`
  );
}

function largeGroupsSection({ direct, uploads, push, goal }: LargeGroupFigures): string {
  const dollars = (value: number) => `$${value.toExponential(2)}`;
  const rows = [
    ['direct (a contact)', direct, direct.lastMemberMs] as const,
    ...uploads.map((upload) => [`${upload.sides.toLocaleString('en')} sides, ${upload.mode}`, upload, upload.lastMemberMs] as const),
  ].map(([what, figure, lastMs]) => [
    what,
    figure.itemsWritten.toLocaleString('en'),
    figure.itemsRead.toLocaleString('en'),
    `${figure.readUnits.toLocaleString('en')} / ${figure.writeUnits.toLocaleString('en')}`,
    dollars(figure.cost.dynamodb),
    `${dollars(figure.cost.lambda)} (${figure.fanOutInvocations} fan-out, ${figure.fanOutBilledMs} ms)`,
    dollars(figure.cost.total),
    `${(figure.cost.total / direct.cost.total).toFixed(2)} ×`,
    `${lastMs} ms`,
  ]);
  return (
    `### Large groups

One upload, on the local server with its stream consumers, every DynamoDB call metered:

${table(['Upload into', 'Items written', 'Items read', 'RRU / WRU', 'DynamoDB $', 'Lambda $', 'Total $', 'Of direct', 'Last member'], rows)}

` +
    `Goal at ${goal.sides.toLocaleString('en')} sides (≤ 3 × direct, every inbox within 2 s): ${goal.costRatio} ×, ${goal.lastMemberMs} ms ${mark(goal.met)}. ` +
    `Push to ${push.members.toLocaleString('en')} connected members, ${push.uploads} uploads, answer to hint: p50 ${push.p50Ms} ms, p95 ${push.p95Ms} ms, ` +
    `max ${push.maxMs} ms (${push.heard.toLocaleString('en')} heard); AppSync Events ${push.appsyncOperations.toLocaleString('en')} operations, ${dollars(push.appsyncDollars)} per upload.`
  );
}

function eventsSection({ forwarding, feedPages }: EventFigures): string {
  const types = Object.entries(feedPages.types)
    .sort(([, a], [, b]) => b - a)
    .map(([type, count]) => `${type} ${count.toLocaleString('en')}`)
    .join(', ');
  return (
    `### Events\n\nCommit to forward, on the local server with its stream consumers and EVENTS_FORWARD_URL at a receiver in the bench process ` +
    `(loopback): ${forwarding.writes} PUT /v1/conversations/:id (a mute toggle, one conversation.updated each) by ${forwarding.users} users in turn, ` +
    `one at a time (each after the envelope of the one before and a random pause of up to 250 ms, so writes land anywhere in the poller's cycle), ` +
    `each timed from its 200 until the receiver took the envelope whose detail.request_id is the answer's x-request-id ` +
    `(the events table's stream read every 100 ms when idle, each envelope POSTed by the forwarder; ` +
    `${forwarding.envelopesReceived.toLocaleString('en')} envelopes taken in all, the parts before included).\n\n` +
    table(['Writes', 'p50 (ms)', 'p95 (ms)', 'Max (ms)'], [[forwarding.writes, forwarding.p50Ms, forwarding.p95Ms, forwarding.maxMs]]) +
    `\n\nItems read per page of GET /v1/events (ScannedCount summed over the page's queries, every DynamoDB call of the server counted by a proxy), ` +
    `one user's feed of ${feedPages.events.toLocaleString('en')} events (${types}; written in ${feedPages.seedSeconds} s). Target: ≤ limit + 1.\n\n` +
    table(
      ['Page', 'Limit', 'Matching in the feed', 'Returned', 'Items read', 'Queries', 'Target'],
      feedPages.pages.map((page) => [
        page.page,
        page.limit,
        page.matching.toLocaleString('en'),
        page.returned,
        page.itemsRead.toLocaleString('en'),
        page.queries,
        mark(page.itemsRead <= page.limit + 1),
      ]),
    )
  );
}

function contentionSection(figures: ContentionFigures): string {
  const { writer, groupUploads } = figures;
  const counts = (record: Record<string, number>) =>
    Object.entries(record)
      .map(([name, count]) => `${name} ${count}`)
      .join(', ');
  return (
    `### Contention\n\nA group of ${figures.groupSides.toLocaleString('en')} sides (opened in ${figures.seedSeconds} s); one member writes ` +
    `${writer.requests} requests, ${figures.writesInFlight} in flight (${counts(writer.byKind)}), over ${figures.windowSeconds} s, while ` +
    `${figures.uploaders} other members upload into the group one after another (${groupUploads.requests} uploads, each fanned out to every side). ` +
    `Retries counted from the server's request lines. Target: no 5xx.\n\n` +
    table(
      [
        'Requests',
        'Statuses',
        'Met contention',
        'Contention retries',
        'Most of one',
        'Throttling retries',
        '5xx',
        'p50 (ms)',
        'p95 (ms)',
        'Max (ms)',
        'Target',
      ],
      [
        [
          writer.requests,
          counts(writer.statuses),
          writer.metContention,
          writer.contentionRetries,
          writer.maxRetriesOfOne,
          writer.throttlingRetries,
          writer.serverErrors,
          writer.p50Ms,
          writer.p95Ms,
          writer.maxMs,
          mark(writer.serverErrors === 0),
        ],
      ],
    ) +
    `\n\nThe group's uploads meanwhile: ${counts(groupUploads.statuses)}; ${groupUploads.metContention} met contention, ${groupUploads.serverErrors} answered 5xx. ` +
    `The fan-out had written everything ${figures.fanOutSettledSeconds} s after the writer's last answer; the writer's feed then held ` +
    `${figures.inWritersFeed.found} of the ${figures.inWritersFeed.uploads} uploads' attachment.created.`
  );
}

function largestInputs(bundles: BundleFigure[]): string {
  const over = bundles.filter((bundle) => !bundle.withinLimit);
  if (over.length === 0) return '';
  const lines = over.map(
    (bundle) =>
      `- ${bundle.name} (${kb(bundle.minifiedBytes)}): ` +
      bundle.largestInputs.map((input) => `${input.path} ${kb(input.bytes)}`).join(', '),
  );
  return `\n\nLargest inputs of the bundles over their target (esbuild metafile, bytes in output):\n${lines.join('\n')}`;
}

function uploadsSection(uploads: UploadFigures): string {
  return (
    `### Uploads\n\nMedian of ${uploads.runs} uploads of random bytes: POST /v1/attachments (multipart) through the local API, ` +
    `beside a PutObject of the same bytes from the bench process through the same file store to the same S3 stand-in, ` +
    `and the same request to a path with no route (the gateway reads the body, then answers 404 route_not_found): the client-to-gateway hop alone. ` +
    `Memory: fresh processes running the UploadAttachment bundle; resident memory after a warm-up upload and a GC (idle), ` +
    `and the kernel's peak (VmHWM, reset first) during one upload, from the invocation payload's JSON to the response; ` +
    `"of which payload" is the peak once the runtime's part is done (JSON text read and parsed into the event), before the handler runs. ` +
    `Targets: API ≤ ${TARGETS.uploadRatio} × PutObject; peak above idle ≤ ${TARGETS.uploadMemoryPerFileByte} × the file.\n\n` +
    table(
      [
        'File',
        'API (ms)',
        'PutObject (ms)',
        'API / PutObject',
        'Target',
        'Body to the gateway alone (ms)',
        'Idle RSS (MiB)',
        'Peak above idle (MiB)',
        'of which payload (MiB)',
        'Per MiB uploaded',
        'Target',
      ],
      uploads.sizes.map((size) => [
        `${size.mebibytes} MiB`,
        size.apiMs,
        size.putObjectMs,
        size.ratio,
        mark(size.ratio <= TARGETS.uploadRatio),
        size.bodyTransferMs,
        size.idleMiB,
        size.peakAboveIdleMiB,
        size.payloadMiB,
        size.peakPerMiB,
        mark(size.peakPerMiB <= TARGETS.uploadMemoryPerFileByte),
      ]),
    ) +
    `\n\nMarginal peak, ${uploads.sizes[0]!.mebibytes} → ${uploads.sizes.at(-1)!.mebibytes} MiB: ${uploads.marginalPeakPerMiB} MiB per MiB uploaded.`
  );
}

function uploadSessionsSection(figures: SessionFlowFigures): string {
  const [small, large] = [figures.completeMemory[0]!, figures.completeMemory.at(-1)!];
  const list = (counts: Record<string, number>) =>
    Object.entries(counts)
      .map(([name, count]) => `${name} ${count}`)
      .join(', ');
  return (
    `### Upload sessions\n\nA ${figures.mebibytes} MiB file (${figures.partCount} parts of ${figures.partSize / 1024 / 1024} MiB), median of ${figures.rounds} rounds each way, ` +
    `${figures.concurrency} parts in flight: through the session flow (POST /v1/upload_sessions, presigned URLs 100 a call, PUT straight to the S3 stand-in, complete: ` +
    `assembly, size check, type sniff, transaction) against CreateMultipartUpload, UploadPart and CompleteMultipartUpload from the bench process. ` +
    `Target: session rate ≥ ${TARGETS.sessionRatio} × direct.\n\n` +
    table(
      ['Flow', 'Time (ms)', 'MiB/s', 'Session / direct', 'Target'],
      [
        ['Session flow', figures.sessionMs, figures.sessionMiBps, figures.ratio, mark(figures.ratio >= TARGETS.sessionRatio)],
        ['UploadPart directly', figures.directMs, figures.directMiBps, '', ''],
      ],
    ) +
    `\n\nComplete function, fresh process, peak above idle: ${small.mebibytes} MiB file ${small.peakAboveIdleMiB} MiB, ${large.mebibytes} MiB file ${large.peakAboveIdleMiB} MiB ` +
    `(the bytes never reach a function). Per GiB uploaded: API requests ${list(figures.apiRequestsPerGiB)}; DynamoDB operations ${list(figures.dynamodbPerGiB)}; ` +
    `capacity ${figures.capacityPerGiB.readUnits} RCU and ${figures.capacityPerGiB.writeUnits} WCU (strongly consistent reads, transactional writes at 2 WCU per item).`
  );
}

function realtimeSection({ commitToHint, connections, cost }: RealtimeFigures): string {
  const usd = (value: number) => `$${value}`;
  return [
    '### Realtime',
    `Commit to hint on the local server (the answer of a write to its hint on a subscribed WebSocket client), ${commitToHint.changes} changes one at a time:`,
    table(
      ['p50 (ms)', 'p95 (ms)', 'max (ms)', `p95 ≤ ${REALTIME_TARGETS.commitToHintP95Ms} ms`],
      [[commitToHint.p50Ms, commitToHint.p95Ms, commitToHint.maxMs, mark(commitToHint.p95Ms <= REALTIME_TARGETS.commitToHintP95Ms)]],
    ),
    `Connections held at once, each subscribed to its own channel (${connections.holdSeconds} s):`,
    table(
      ['Held', 'Connect all (s)', 'Server RSS before (MiB)', 'With them (MiB)', 'KiB per connection', 'Heard after the hold'],
      [
        [
          connections.held,
          connections.connectSeconds,
          connections.serverRssBeforeMiB,
          connections.serverRssWithMiB,
          connections.serverKiBPerConnection,
          `${connections.heardAfterHold.heard}/${connections.heardAfterHold.sampled}`,
        ],
      ],
    ),
    `Price (us-east-1 list prices: AppSync Events $${REALTIME_PRICES.appsyncOperationPerMillion}/M operations, $${REALTIME_PRICES.appsyncConnectionMinutePerMillion}/M connection-minutes; API Gateway WebSockets $${REALTIME_PRICES.apiGatewayMessagePerMillion}/M messages, $${REALTIME_PRICES.apiGatewayConnectionMinutePerMillion}/M connection-minutes):`,
    table(
      ['', 'AppSync Events', 'API Gateway WebSockets'],
      [
        ['Per million pushes to one client', usd(cost.appsyncPerMillionPushes), usd(cost.apiGatewayPerMillionPushes)],
        ['Per connected user-month', usd(cost.appsyncPerConnectedUserMonth), usd(cost.apiGatewayPerConnectedUserMonth)],
      ],
    ),
  ].join('\n\n');
}

function previewsSection({ uploadToReady, uploadAnswer, worker, costPerMillion }: PreviewFigures): string {
  const ms = (figure: { p50Ms: number; p95Ms: number }) => `${figure.p50Ms} / ${figure.p95Ms}`;
  return (
    `### Previews\n\nFrom an image upload's 201 to its preview read \`ready\` (polled every ${uploadToReady.pollMs} ms), ` +
    `${uploadToReady.uploads} uploads of a ${uploadToReady.megapixels}-megapixel JPEG (${kb(uploadToReady.fileBytes)}), one at a time, ` +
    `through a local server with its stream consumers and the previews queue: p50 / p95 ${ms(uploadToReady)} ms ` +
    `(target p95 ≤ 2,000 ms: ${mark(uploadToReady.p95Ms <= 2_000)}). The upload's own answer, p50 / p95: ${ms(uploadAnswer.image)} ms for the JPEG, ` +
    `${ms(uploadAnswer.notImage)} ms for as many bytes that are no image.\n\n` +
    table(
      ['Image', 'File', 'Runs', 'Render (ms, median)', 'ms per MP', 'Peak RSS (MiB)', 'RSS before render (MiB)'],
      worker.map((figure) => [
        figure.image,
        kb(figure.fileBytes),
        figure.runs,
        figure.durationMs,
        figure.msPerMegapixel,
        figure.peakRssMiB,
        figure.rssBeforeRenderMiB,
      ]),
    ) +
    `\n\nCost per million previews of a 12 MP JPEG (list prices; requests counted from the code, bench/previews.ts): ` +
    `Lambda $${costPerMillion.lambda}, S3 $${costPerMillion.s3}, DynamoDB $${costPerMillion.dynamodb}, SQS $${costPerMillion.sqs}: ` +
    `$${costPerMillion.total}.`
  );
}
