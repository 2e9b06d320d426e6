import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DynamoDBBatchResponse } from 'aws-lambda';
import type { TokenAuthorizer } from '../../functions/authorizer.js';
import { Composition } from '../../shared/app.js';
import { groupsClaimName } from '../../shared/auth/groups.js';
import { REMOVALS_FILTER_PATTERN } from '../../shared/cleanup/stream-events.js';
import { type Config, type Environment, readConfig, tableVariables } from '../../shared/config.js';
import { CHANGES_FILTER_PATTERN } from '../../shared/conversations/fan-out.js';
import {
  SETTLING_BATCH_SIZE,
  SETTLING_DELIVERIES,
  SETTLING_TIMEOUT_SECONDS,
  SETTLING_VISIBILITY_SECONDS,
} from '../../shared/conversations/settling-timers.js';
import { byTableRole, stackTables, type TableRole } from '../../shared/dynamo/tables.js';
import { BUS_FILTER_PATTERN } from '../../shared/events/bus.js';
import type { HttpHandler } from '../../shared/http/handler.js';
import { logger } from '../../shared/observability.js';
import {
  PREVIEW_BATCH_SIZE,
  PREVIEW_DELIVERIES,
  PREVIEW_TIMEOUT_SECONDS,
  PREVIEW_VISIBILITY_SECONDS,
} from '../../shared/previews/delivery.js';
import type { EventApiAuthorizerEvent, EventApiAuthorizerResult } from '../../shared/realtime/authorization.js';
import { REALTIME_NAMESPACE, REALTIME_PATH } from '../../shared/realtime/channel.js';
import { routes } from '../../shared/routes.js';
import {
  SCAN_TIMER_BATCH_SIZE,
  SCAN_TIMER_DELIVERIES,
  SCAN_TIMER_TIMEOUT_SECONDS,
  SCAN_TIMER_VISIBILITY_SECONDS,
} from '../../shared/scanning/timers.js';
import type { StreamHandler } from '../../shared/stream-consumer.js';
import type { FilterPattern } from '../../shared/stream-records.js';
import type { Clock } from '../../shared/time.js';
import {
  AUTHORIZER_ENTRY,
  CLEANUP_ENTRY,
  CONSUMER_STREAM_READING,
  CONSUMER_TIMEOUT_SECONDS,
  FAN_OUT_ENTRY,
  FUNCTION_TIMEOUT_SECONDS,
  LARGE_THREAD_SETTLING_ENTRY,
  PREVIEW_ENTRY,
  REALTIME_AUTHORIZER_ENTRY,
  REALTIME_PUBLISHER_ENTRY,
  REALTIME_PUBLISHER_STREAM_READING,
  SCAN_RECORDER_ENTRY,
  SCAN_RECORDER_RETRIES,
  SCAN_TIMEOUT_ENTRY,
  type StreamReading,
} from '../declarations/function-settings.js';
import { channelNamespaceArn, type Permission, realtimePublisherPermissions } from '../declarations/permissions.js';
import { REPOSITORY_ROOT } from '../declarations/repository.js';
import { lockDataDirectory } from './data-lock.js';
import { ensureTables, stackTablesNamed, startDynamoDbLocal } from './dynamodb.js';
import { startDynamoDbEnforcer } from './dynamodb-iam.js';
import { eventsForwarder } from './events-forwarder.js';
import { answerClientError, createGateway, type GatewayOptions, LOCAL_ACCOUNT, type LoadedRoute } from './gateway.js';
import {
  actingAs,
  CLEANUP_FUNCTION,
  EVENTS_PIPE,
  FAN_OUT_FUNCTION,
  functionCredentials,
  functionKeyId,
  type GrantsOverride,
  type GrantUsed,
  LARGE_THREAD_SETTLING_FUNCTION,
  localIam,
  MALWARE_PROTECTION_PLAN,
  type PolicyEvaluator,
  PREVIEW_FUNCTION,
  PREVIEW_QUEUE_NAME,
  protectionPlanArn,
  REALTIME_PUBLISHER_FUNCTION,
  SCAN_RECORDER_FUNCTION,
  SCAN_TIMEOUT_FUNCTION,
  SCAN_TIMER_QUEUE_NAME,
  THREAD_SETTLING_QUEUE_NAME,
  tablesOf,
} from './iam.js';
import { loadOpenApi, OPENAPI_PATH } from './openapi.js';
import { type LocalQueue, type LocalQueueOptions, localSqs, startLocalQueue } from './queue.js';
import { attachRealtime, type LocalRealtime } from './realtime.js';
import { startS3 } from './s3.js';
import { type LocalScanner, type LocalScannerOptions, startLocalScanner } from './scanner.js';
import { readLocalSettings } from './server-settings.js';
import { type StreamPoller, type StreamPollerOptions, startStreamPoller } from './stream-poller.js';
import { startTimeToLive } from './time-to-live.js';

export { REPOSITORY_ROOT };

export interface LocalApiOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /**
   * Where DynamoDB Local and the S3 stand-in keep their data, and the local
   * token secret; one server at a time (a second is refused, naming the
   * first: data-lock.ts). Omitted: nothing persists.
   */
  dataDirectory?: string;
  /**
   * The handlers' environment on top of this process's (e.g. a dead endpoint
   * for fault tests), and the server's own settings (LOCAL_STREAM_CONSUMERS);
   * never written to process.env.
   */
  env?: Record<string, string>;
  /**
   * A DynamoDB that this server shares with others (the test suite's one
   * DynamoDB Local): its tables are created there under this prefix, so
   * servers never see each other's data. An explicit env DYNAMODB_ENDPOINT wins.
   */
  sharedDynamodb?: { endpoint: string; tablePrefix: string };
  /** DynamoDB Local's and the S3 stand-in's ports (fixed for sam local's env-vars file); default: free ones. */
  dynamodbPort?: number;
  s3Port?: number;
  /** "Now" for every rule that depends on it (mutes ending, how far ahead an open may be); default: the system clock. */
  clock?: Clock;
  /** The functions' timeout the emulator enforces; default Lambda's (FUNCTION_TIMEOUT_SECONDS). Tests set a short one. */
  functionTimeoutMs?: number;
  /** How often the real-time endpoint sends `ka`; default AppSync's minute. Tests set a short one. */
  keepAliveMs?: number;
  /** The stream consumers' timeout, from which their time budget is drawn; default Lambda's (CONSUMER_TIMEOUT_SECONDS). */
  consumerTimeoutMs?: number;
  /** How long after an item's expiry the TTL stand-in deletes it (infra/local/time-to-live.ts); default 0. Tests wait long. */
  timeToLiveDelayMs?: number;
  /**
   * The functions' permissions the local DynamoDB and S3 enforce, from those the stack grants
   * (infra/local/iam.ts); default: as granted. A test takes one away to prove what needs it.
   */
  grants?: GrantsOverride;
  /** Told of each grant a function's call was allowed by (the integration lane's check that every grant is used). */
  grantUsed?: GrantUsed;
  /** One id for every request (requestContext.requestId), as sam local gives; default: a new one per request, as API Gateway. */
  requestId?: string;
  /** The previews queue's visibility timeout, the wait before a failed request is delivered again; default the stack's. Tests set a short one. */
  previewVisibilityMs?: number;
  /** The scanner stand-in's delay from an object's creation to its result; default LOCAL_SCAN_DELAY_MS, else 1 s. */
  scanDelayMs?: number;
  /** Told of each stream consumer invocation, by function name, and how long it ran (the bench bills them as Lambda would). */
  consumerInvoked?: (functionName: string, durationMs: number) => void;
}

export interface LocalApi {
  url: string;
  authSecret: string;
  /** The claim its authorizer reads the groups from (GROUPS_CLAIM), for minting tokens. */
  groupsClaim: string;
  dynamodbEndpoint: string;
  /** The S3 that holds the files; file_url links point here. */
  s3Endpoint: string;
  /** The configuration the handlers run with (table names, endpoints). */
  config: Config;
  /** The Composition (clients, services) the handlers run on. */
  composition: Composition;
  /** The Event API's stand-in: its WebSocket URL and HTTP host (what GET /v1/realtime answers), its connections. */
  realtime: LocalRealtime & { url: string; host: string };
  /** The preview worker's queue (SQS's stand-in): its dead letters. */
  previews: LocalQueue;
  /** The scan timers' queue, when scanning is on (the fan-out's delayed messages to the scan timeout). */
  scanTimers?: LocalQueue;
  /** The large threads' settling timers' queue (the fan-out's delayed messages to the settling sweep). */
  threadSettling: LocalQueue;
  /**
   * GuardDuty's stand-in (infra/local/scanner.ts), when scanning is on. It
   * hears of the objects of this server's own S3 stand-in; a test that runs
   * its own S3 (S3_ENDPOINT) tells it of each object created (objectCreated).
   */
  scanner?: LocalScanner;
  /**
   * Settles once every stream consumer (the cleanup, the fan-out, the publisher, the events pipe) has
   * handled what was written before the call, failed batches retried included: a test waits for it
   * before relying on what they did, or did not, do.
   */
  streamsCaughtUp(): Promise<void>;
  /** Every call of a function the local IAM refused (DynamoDB's and S3's), in AWS's words, each once. */
  iamRefusals(): string[];
  close(): Promise<void>;
}

/**
 * The API as `npm start` serves it: DynamoDB Local (a child process) and the
 * S3 stand-in behind the functions' IAM, the tables created from the code's
 * definitions, and the gateway emulator and the Event API's stand-in in front
 * of the real handler modules, run on a Composition built from this server's settings.
 */
export async function startLocalApi(options: LocalApiOptions = {}): Promise<LocalApi> {
  const server = serverSettings(options);
  const stoppers = new Stoppers();
  try {
    if (options.dataDirectory) claimDataDirectory(options.dataDirectory, stoppers);
    const configured = readConfig(server.env);
    const dynamodb = await provideDynamodb(options, server, configured, stoppers);
    // Every function's role as the stack grants it over this server's tables and bucket, enforced by both stand-ins.
    const resources = { account: LOCAL_ACCOUNT, region: server.region, tables: dynamodb.tables, bucket: configured.filesBucket };
    const iam = localIam(server.credentials, resources, options.grants, options.grantUsed);
    const functionsDynamodb = await enforceDynamodbIam(server, dynamodb, iam, stoppers);
    // The scanner starts once the handlers exist; the S3 stand-in tells it of objects from the start.
    let scanner: LocalScanner | undefined;
    const objectCreated = (key: string) => scanner?.objectCreated(key);
    const s3Endpoint = server.env.S3_ENDPOINT || (await startFilesStandIn(options, server, configured, iam, stoppers, objectCreated));
    const authSecret = server.env.AUTH_SECRET || localSecret(options.dataDirectory);
    // Listening first: the port is part of the real-time endpoint the handlers answer (GET /v1/realtime).
    const listener = await listenFirst(options, server, stoppers);
    const handlerEnv = handlerEnvironment(options, server, { dynamodb, functionsDynamodb, s3Endpoint, authSecret, listener });
    const config = handlerConfig(options, server, handlerEnv, functionsDynamodb);
    const composition = new Composition(config, options.clock);
    stoppers.add(async () => composition.destroy());
    const loaded = await loadRoutes(composition);
    const pollers = server.streamConsumers ? await startStreamConsumers(composition, server, dynamodb, functionsDynamodb, stoppers) : [];
    const authorizer = await loadAuthorizer(config);
    const realtime = await attachRealtimeStandIn(options, server, listener.server, config, stoppers);
    const previews = await startQueue(server, composition, iam, stoppers, {
      name: PREVIEW_QUEUE_NAME,
      url: config.previewQueueUrl,
      entry: PREVIEW_ENTRY,
      function: PREVIEW_FUNCTION,
      batchSize: PREVIEW_BATCH_SIZE,
      maxDeliveries: PREVIEW_DELIVERIES,
      visibilityMs: options.previewVisibilityMs ?? PREVIEW_VISIBILITY_SECONDS * 1000,
      timeoutMs: PREVIEW_TIMEOUT_SECONDS * 1000,
    });
    const scanTimers = config.scanning.enabled
      ? await startQueue(server, composition, iam, stoppers, {
          name: SCAN_TIMER_QUEUE_NAME,
          url: config.scanTimerQueueUrl,
          entry: SCAN_TIMEOUT_ENTRY,
          function: SCAN_TIMEOUT_FUNCTION,
          batchSize: SCAN_TIMER_BATCH_SIZE,
          maxDeliveries: SCAN_TIMER_DELIVERIES,
          visibilityMs: SCAN_TIMER_VISIBILITY_SECONDS * 1000,
          timeoutMs: SCAN_TIMER_TIMEOUT_SECONDS * 1000,
        })
      : undefined;
    const threadSettling = await startQueue(server, composition, iam, stoppers, {
      name: THREAD_SETTLING_QUEUE_NAME,
      url: config.threadSettlingQueueUrl,
      entry: LARGE_THREAD_SETTLING_ENTRY,
      function: LARGE_THREAD_SETTLING_FUNCTION,
      batchSize: SETTLING_BATCH_SIZE,
      maxDeliveries: SETTLING_DELIVERIES,
      visibilityMs: SETTLING_VISIBILITY_SECONDS * 1000,
      timeoutMs: SETTLING_TIMEOUT_SECONDS * 1000,
    });
    scanner = config.scanning.enabled ? await startScanner(server, composition, { iam, s3Endpoint }, stoppers) : undefined;
    const sqs = localSqs([previews, threadSettling, ...(scanTimers ? [scanTimers] : [])]);
    const standIns = [sqs, realtime, ...(scanner ? [scanner] : [])];
    const gateway = gatewayFor(server, { routes: loaded, authorizer, corsOrigins: config.corsOrigins });
    listener.serve((request, response) => {
      if (!standIns.some((standIn) => standIn.handleRequest(request, response))) gateway(request, response);
    });
    return {
      url: listener.url,
      authSecret,
      groupsClaim: groupsClaimName(handlerEnv.GROUPS_CLAIM),
      dynamodbEndpoint: dynamodb.endpoint,
      s3Endpoint,
      config,
      composition,
      realtime: Object.assign(realtime, { url: handlerEnv.REALTIME_URL ?? listener.realtimeUrl, host: listener.host }),
      previews,
      ...(scanTimers ? { scanTimers } : {}),
      threadSettling,
      ...(scanner ? { scanner } : {}),
      streamsCaughtUp: async () => {
        await Promise.all(pollers.map((poller) => poller.caughtUp()));
      },
      iamRefusals: () => [...iam.refused],
      close: () => stoppers.stopAll(),
    };
  } catch (error) {
    await stoppers.stopAll();
    throw error;
  }
}

/** What the server itself runs with, from its options over this process's environment (read, never written). */
interface ServerSettings {
  host: string;
  functionTimeoutMs: number;
  /** The stream consumers' timeout, from which their time budget is drawn. */
  consumerTimeoutMs: number;
  timeToLiveDelayMs: number;
  env: Environment;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  streamConsumers: boolean;
  eventsForwardUrl?: URL;
  requestId?: string;
  scanDelayMs: number;
  consumerInvoked?: LocalApiOptions['consumerInvoked'];
}

function serverSettings(options: LocalApiOptions): ServerSettings {
  const env: Environment = { ...process.env, ...options.env };
  const { streamConsumers, eventsForwardUrl, scanDelayMs } = readLocalSettings(env);
  return {
    host: options.host ?? '127.0.0.1',
    functionTimeoutMs: options.functionTimeoutMs ?? FUNCTION_TIMEOUT_SECONDS * 1000,
    consumerTimeoutMs: options.consumerTimeoutMs ?? CONSUMER_TIMEOUT_SECONDS * 1000,
    timeToLiveDelayMs: options.timeToLiveDelayMs ?? 0,
    env,
    region: env.AWS_REGION ?? 'us-east-1',
    credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID ?? 'local', secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? 'local' },
    streamConsumers,
    scanDelayMs: options.scanDelayMs ?? scanDelayMs,
    ...(eventsForwardUrl ? { eventsForwardUrl } : {}),
    ...(options.requestId ? { requestId: options.requestId } : {}),
    ...(options.consumerInvoked ? { consumerInvoked: options.consumerInvoked } : {}),
  };
}

/** What the server started, stopped in the reverse order. */
class Stoppers {
  readonly #stops: (() => Promise<void>)[] = [];

  add(...stops: (() => Promise<void>)[]): void {
    this.#stops.push(...stops);
  }

  async stopAll(): Promise<void> {
    for (const stop of this.#stops.reverse()) await stop();
  }
}

function claimDataDirectory(dataDirectory: string, stoppers: Stoppers): void {
  const lock = lockDataDirectory(dataDirectory);
  if (lock.takenOverFrom !== undefined)
    logger.warn(`took over the data folder ${dataDirectory} from process ${lock.takenOverFrom}, which ended without releasing it`);
  stoppers.add(async () => lock.release());
}

type TableNames = Record<TableRole, string>;

/** The DynamoDB the tables are in (no IAM in front) and the names they have there. */
interface LocalDynamodb {
  endpoint: string;
  tables: TableNames;
}

/**
 * The DynamoDB the environment names, else the shared one (under this server's
 * prefix), else a DynamoDB Local of its own. Tables are created where this
 * server owns the data (its own DynamoDB Local, or its prefix of a shared
 * one); another endpoint is someone else's to set up.
 */
async function provideDynamodb(
  options: LocalApiOptions,
  server: ServerSettings,
  configured: Config,
  stoppers: Stoppers,
): Promise<LocalDynamodb> {
  const names = tablesOf(configured);
  const named = options.env?.DYNAMODB_ENDPOINT ?? (options.sharedDynamodb ? undefined : server.env.DYNAMODB_ENDPOINT);
  if (named) return { endpoint: named, tables: names };
  let dynamodb: LocalDynamodb;
  if (options.sharedDynamodb) {
    const { endpoint, tablePrefix } = options.sharedDynamodb;
    dynamodb = { endpoint, tables: byTableRole((role) => tablePrefix + names[role]) };
  } else {
    const directory = options.dataDirectory && join(options.dataDirectory, 'dynamodb');
    const started = await startDynamoDbLocal(server.host, directory, options.dynamodbPort);
    stoppers.add(started.close);
    dynamodb = { endpoint: started.endpoint, tables: names };
  }
  await ensureTables(dynamodb.endpoint, server.region, server.credentials, stackTablesNamed(dynamodb.tables));
  return dynamodb;
}

/** The DynamoDB the functions call: the IAM in front of it, or the DynamoDB itself where it has IAM of its own. */
interface FunctionsDynamodb {
  endpoint: string;
  /** Whether the IAM in front knows each function's key (and so the functions call with theirs). */
  enforcing: boolean;
}

/**
 * IAM in front of a DynamoDB without it (DynamoDB Local, whoever started it);
 * a DynamoDB over HTTPS is AWS's, which has its own.
 */
async function enforceDynamodbIam(
  server: ServerSettings,
  dynamodb: LocalDynamodb,
  iam: PolicyEvaluator,
  stoppers: Stoppers,
): Promise<FunctionsDynamodb> {
  if (new URL(dynamodb.endpoint).protocol !== 'http:') return { endpoint: dynamodb.endpoint, enforcing: false };
  const enforcer = await startDynamoDbEnforcer({
    host: server.host,
    upstream: dynamodb.endpoint,
    evaluator: iam,
    resources: { account: LOCAL_ACCOUNT, region: server.region },
  });
  stoppers.add(enforcer.close);
  return { endpoint: enforcer.endpoint, enforcing: true };
}

async function startFilesStandIn(
  options: LocalApiOptions,
  server: ServerSettings,
  configured: Config,
  iam: PolicyEvaluator,
  stoppers: Stoppers,
  objectCreated: (key: string) => void,
): Promise<string> {
  const directory = options.dataDirectory && join(options.dataDirectory, 's3');
  const { filesBucket, corsOrigins } = configured;
  const s3 = await startS3(server.host, filesBucket, server.credentials, directory, options.s3Port, corsOrigins, iam, objectCreated);
  stoppers.add(s3.close);
  return s3.endpoint;
}

type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

/** The server's HTTP listener, bound before what it serves exists: a 503 until `serve` hands it over. */
interface Listener {
  server: Server;
  url: string;
  /** `host:port`, the real-time endpoint's HTTP host. */
  host: string;
  realtimeUrl: string;
  serve(listener: RequestListener): void;
}

async function listenFirst(options: LocalApiOptions, server: ServerSettings, stoppers: Stoppers): Promise<Listener> {
  let handle: RequestListener = (_request, response) => {
    response.writeHead(503, { 'content-length': 0 });
    response.end();
  };
  const http = createServer((request, response) => handle(request, response));
  http.on('clientError', answerClientError);
  await listen(http, server.host, options.port ?? 3000);
  stoppers.add(async () => {
    await new Promise<void>((done) => http.close(() => done()));
    http.closeAllConnections();
  });
  const { port } = http.address() as AddressInfo;
  const host = `${server.host}:${port}`;
  return {
    server: http,
    url: `http://${host}`,
    host,
    realtimeUrl: `ws://${host}${REALTIME_PATH}`,
    serve: (listener) => {
      handle = listener;
    },
  };
}

/** What the handlers see, as Lambda's environment: passed to them, not written to process.env. */
function handlerEnvironment(
  options: LocalApiOptions,
  server: ServerSettings,
  parts: { dynamodb: LocalDynamodb; functionsDynamodb: FunctionsDynamodb; s3Endpoint: string; authSecret: string; listener: Listener },
): Environment {
  return {
    ...server.env,
    AWS_REGION: server.region,
    DYNAMODB_ENDPOINT: parts.functionsDynamodb.endpoint,
    S3_ENDPOINT: parts.s3Endpoint,
    AUTH_SECRET: parts.authSecret,
    ...tableVariables((role) => parts.dynamodb.tables[role]),
    REALTIME_URL: parts.listener.realtimeUrl,
    REALTIME_HOST: parts.listener.host,
    PREVIEW_QUEUE_URL: queueUrl(parts.listener, PREVIEW_QUEUE_NAME),
    SCAN_TIMER_QUEUE_URL: queueUrl(parts.listener, SCAN_TIMER_QUEUE_NAME),
    THREAD_SETTLING_QUEUE_URL: queueUrl(parts.listener, THREAD_SETTLING_QUEUE_NAME),
    // SendObjectMalwareScan reaches the scanner's stand-in on the server's listener.
    GUARDDUTY_ENDPOINT: parts.listener.url,
    // What a test sets explicitly wins (e.g. an empty AUTH_SECRET, to make the authorizer read AUTH_SECRET_ARN).
    ...options.env,
  };
}

/**
 * The handlers' configuration, with the keys they call with: a stand-in of
 * ours (this server's, or one a test hands over) knows each function's key;
 * an S3 the user configured in the environment (MinIO) knows the user's.
 */
function handlerConfig(options: LocalApiOptions, server: ServerSettings, handlerEnv: Environment, dynamodb: FunctionsDynamodb): Config {
  const standInS3 = !process.env.S3_ENDPOINT || options.env?.S3_ENDPOINT !== undefined;
  const { credentials } = server;
  return {
    ...readConfig(handlerEnv),
    credentials,
    ...(standInS3 ? { s3Credentials: functionCredentials(credentials) } : {}),
    ...(dynamodb.enforcing ? { dynamodbCredentials: functionCredentials(credentials) } : {}),
  };
}

function loadRoutes(composition: Composition): Promise<LoadedRoute[]> {
  return Promise.all(
    routes.map(async (route) => ({
      route,
      handler: actingAs(route.name, ((await loadModule(route.entry)).handler as HttpHandler<Composition>).withComposition(composition)),
    })),
  );
}

async function loadAuthorizer(config: Config): Promise<TokenAuthorizer> {
  return ((await loadModule(AUTHORIZER_ENTRY)).handler as { withConfig(config: Config): TokenAuthorizer }).withConfig(config);
}

const loadConsumer = async (composition: Composition, entry: string) =>
  ((await loadModule(entry)).handler as { withComposition(composition: Composition): StreamHandler }).withComposition(composition);

/** The handler, telling `invoked` how long each of its invocations ran. */
function timed(
  functionName: string,
  handler: StreamPollerOptions['handler'],
  invoked: ServerSettings['consumerInvoked'],
): StreamPollerOptions['handler'] {
  if (!invoked) return handler;
  return async (event, time): Promise<DynamoDBBatchResponse | undefined> => {
    const started = performance.now();
    try {
      return (await handler(event, time)) ?? undefined;
    } finally {
      invoked(functionName, performance.now() - started);
    }
  };
}

/** A poller of the streams of some of the tables, read as one reader's role, as the stack's mappings do. */
type Poller = (
  reader: string,
  consumed: TableRole[],
  filter: FilterPattern,
  handler: StreamPollerOptions['handler'],
  timeoutMs?: number,
  reading?: StreamReading,
) => StreamPoller;

/**
 * What the stack's event source mappings run (the cleanup, the fan-out, the
 * real-time publisher), DynamoDB's TTL on the upload intents and, with
 * EVENTS_FORWARD_URL, what its events pipe does, on whatever DynamoDB the
 * handlers use: tables someone else made may lack the stream, which each
 * poller says once per table. The pollers started.
 */
async function startStreamConsumers(
  composition: Composition,
  server: ServerSettings,
  dynamodb: LocalDynamodb,
  functionsDynamodb: FunctionsDynamodb,
  stoppers: Stoppers,
): Promise<StreamPoller[]> {
  const { credentials } = server;
  // Each reads its streams as its role (the event source mapping's, the pipe's) through the IAM in front.
  const poller: Poller = (reader, consumed, filter, handler, timeoutMs = server.consumerTimeoutMs, reading = CONSUMER_STREAM_READING) =>
    startStreamPoller({
      ...reading,
      endpoint: functionsDynamodb.endpoint,
      region: server.region,
      credentials,
      streamCredentials: functionsDynamodb.enforcing ? { ...credentials, accessKeyId: functionKeyId(credentials, reader) } : credentials,
      tables: consumed.flatMap((role) => {
        const { stream } = stackTables[role];
        return stream ? [{ name: dynamodb.tables[role], stream }] : [];
      }),
      filter,
      handler: timed(reader, handler, server.consumerInvoked),
      functionTimeoutMs: timeoutMs,
    });
  const cleanup = poller(
    CLEANUP_FUNCTION,
    ['conversations', 'attachments', 'uploadSessions'],
    REMOVALS_FILTER_PATTERN,
    actingAs(CLEANUP_FUNCTION, await loadConsumer(composition, CLEANUP_ENTRY)),
  );
  const fanOut = poller(
    FAN_OUT_FUNCTION,
    ['attachments'],
    CHANGES_FILTER_PATTERN,
    actingAs(FAN_OUT_FUNCTION, await loadConsumer(composition, FAN_OUT_ENTRY)),
  );
  const timeToLive = startTimeToLiveStandIn(server, dynamodb);
  stoppers.add(cleanup.stop, fanOut.stop, timeToLive.stop);
  // What the stack's publisher mapping runs: a hint per new event item, published to the Event API, as its own function.
  const publisher = poller(
    REALTIME_PUBLISHER_FUNCTION,
    ['events'],
    BUS_FILTER_PATTERN,
    actingAs(REALTIME_PUBLISHER_FUNCTION, await loadConsumer(composition, REALTIME_PUBLISHER_ENTRY)),
    server.consumerTimeoutMs,
    REALTIME_PUBLISHER_STREAM_READING,
  );
  stoppers.add(publisher.stop);
  // From LATEST: the API serves once the publisher reads from here on, or a client's first hints would be skipped.
  await publisher.ready;
  const forwarder = server.eventsForwardUrl ? startEventsForwarder(server, server.eventsForwardUrl, poller, stoppers) : undefined;
  return [cleanup, fanOut, publisher, ...(forwarder ? [forwarder] : [])];
}

/**
 * What DynamoDB's TTL does on AWS, for the upload intents of the attachments
 * table: an intent its run left behind expires, and its REMOVE reaches the
 * cleanup. (The other tables' TTL is not run: see docs/consistency.md,
 * "DynamoDB Local and AWS".) DynamoDB's own deletes: no role, straight to the table.
 */
function startTimeToLiveStandIn(server: ServerSettings, dynamodb: LocalDynamodb): { stop(): Promise<void> } {
  return startTimeToLive({
    endpoint: dynamodb.endpoint,
    region: server.region,
    credentials: server.credentials,
    table: { name: dynamodb.tables.attachments, definition: stackTables.attachments },
    delayMs: server.timeToLiveDelayMs,
    functionTimeoutMs: server.functionTimeoutMs,
  });
}

/** What the stack's events pipe does: new event items to the operators' bus, here POSTed to EVENTS_FORWARD_URL. */
function startEventsForwarder(server: ServerSettings, url: URL, poller: Poller, stoppers: Stoppers): StreamPoller {
  const forwarding = new AbortController();
  const forwarder = poller(
    EVENTS_PIPE,
    ['events'],
    BUS_FILTER_PATTERN,
    eventsForwarder({ url, region: server.region, account: LOCAL_ACCOUNT, signal: forwarding.signal }),
    // The pipe's enrichment is a function of the API's settings.
    server.functionTimeoutMs,
  );
  stoppers.add(async () => {
    // Stopping first, so that the delivery the abort ends is not reported as a failure to retry.
    const stopped = forwarder.stop();
    forwarding.abort();
    await stopped;
  });
  return forwarder;
}

/**
 * The Event API's stand-in on the server's listener: its Lambda authorizer,
 * and which local keys may publish (those whose role's permissions grant
 * appsync:EventPublish on the namespace, as IAM answers).
 */
async function attachRealtimeStandIn(
  options: LocalApiOptions,
  server: ServerSettings,
  http: Server,
  config: Config,
  stoppers: Stoppers,
): Promise<LocalRealtime> {
  const { credentials, region } = server;
  const authorizer = (
    (await loadModule(REALTIME_AUTHORIZER_ENTRY)).handler as {
      withConfig(config: Config): (event: EventApiAuthorizerEvent) => Promise<EventApiAuthorizerResult>;
    }
  ).withConfig(config);
  const namespaceArn = channelNamespaceArn({ region, account: LOCAL_ACCOUNT, apiId: 'local' }, REALTIME_NAMESPACE);
  const publishingRoles = new Map<string, Permission[]>([
    [functionKeyId(credentials, REALTIME_PUBLISHER_FUNCTION), realtimePublisherPermissions(namespaceArn)],
  ]);
  const realtime = attachRealtime(http, {
    authorizer,
    region,
    account: LOCAL_ACCOUNT,
    secretAccessKey: credentials.secretAccessKey,
    mayPublish: (accessKeyId) =>
      // The base key is the developer's own, outside any function, which may do anything (as in s3-roles.ts).
      accessKeyId === credentials.accessKeyId ||
      (publishingRoles.get(accessKeyId) ?? []).some(
        (permission) => permission.actions.includes('appsync:EventPublish') && permission.resources.includes(namespaceArn),
      ),
    ...(options.keepAliveMs ? { keepAliveMs: options.keepAliveMs } : {}),
  });
  stoppers.add(realtime.close);
  return realtime;
}

/** The queues' stand-ins are served on the server's listener, at SQS's queue URL path. */
const queueUrl = (listener: Pick<Listener, 'url'>, name: string) => `${listener.url}/${LOCAL_ACCOUNT}/${name}`;

/** One of the stack's queues and its mapping, as the stack declares them. */
interface QueueSettings {
  name: string;
  url: string | undefined;
  entry: string;
  function: string;
  batchSize: number;
  maxDeliveries: number;
  visibilityMs: number;
  timeoutMs: number;
}

/**
 * What one of the stack's queues and its mapping do: the fan-out's messages,
 * delivered to their consumer as its own function (infra/local/queue.ts).
 */
async function startQueue(
  server: ServerSettings,
  composition: Composition,
  iam: PolicyEvaluator,
  stoppers: Stoppers,
  settings: QueueSettings,
): Promise<LocalQueue> {
  const consumer = (
    (await loadModule(settings.entry)).handler as { withComposition(composition: Composition): LocalQueueOptions['handler'] }
  ).withComposition(composition);
  const queue = startLocalQueue({
    name: settings.name,
    region: server.region,
    account: LOCAL_ACCOUNT,
    url: settings.url ?? '',
    iam,
    baseKeyId: server.credentials.accessKeyId,
    handler: actingAs(settings.function, consumer),
    batchSize: settings.batchSize,
    maxDeliveries: settings.maxDeliveries,
    visibilityMs: settings.visibilityMs,
    functionTimeoutMs: Math.min(server.functionTimeoutMs, settings.timeoutMs),
  });
  stoppers.add(queue.stop);
  return queue;
}

/**
 * GuardDuty's stand-in (infra/local/scanner.ts): each new file scanned after
 * the delay, its result handed to the scan recorder as its own function, as
 * the stack's EventBridge rule invokes it (Lambda's two retries, shortened).
 */
async function startScanner(
  server: ServerSettings,
  composition: Composition,
  parts: { iam: PolicyEvaluator; s3Endpoint: string },
  stoppers: Stoppers,
): Promise<LocalScanner> {
  const recorder = (
    (await loadModule(SCAN_RECORDER_ENTRY)).handler as { withComposition(composition: Composition): LocalScannerOptions['recorder'] }
  ).withComposition(composition);
  const resources = { account: LOCAL_ACCOUNT, region: server.region };
  const scanner = startLocalScanner({
    ...resources,
    bucket: composition.config.filesBucket,
    s3Endpoint: parts.s3Endpoint,
    credentials: { ...server.credentials, accessKeyId: functionKeyId(server.credentials, MALWARE_PROTECTION_PLAN) },
    iam: parts.iam,
    baseKeyId: server.credentials.accessKeyId,
    planArn: protectionPlanArn(resources),
    delayMs: server.scanDelayMs,
    recorder: actingAs(SCAN_RECORDER_FUNCTION, recorder),
    retries: SCAN_RECORDER_RETRIES,
    retryDelayMs: Math.min(1000, server.scanDelayMs + 100),
    functionTimeoutMs: server.consumerTimeoutMs,
  });
  stoppers.add(scanner.stop);
  return scanner;
}

/** The gateway emulator in front of the handlers, with the OpenAPI document beside the API. */
function gatewayFor(server: ServerSettings, api: Pick<GatewayOptions, 'routes' | 'authorizer' | 'corsOrigins'>): RequestListener {
  const openApiJson = JSON.stringify(loadOpenApi());
  const gateway = createGateway({
    ...api,
    region: server.region,
    functionTimeoutMs: server.functionTimeoutMs,
    ...(server.requestId ? { requestId: server.requestId } : {}),
    publicRoutes: {
      [OPENAPI_PATH]: (_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(openApiJson) });
        response.end(openApiJson);
      },
    },
  });
  return (request, response) => void gateway(request, response);
}

const loadModule = (entry: string) => import(pathToFileURL(join(REPOSITORY_ROOT, entry)).href);

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((done, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => done());
  });
}

/** The HS256 secret of local tokens: kept under the data directory so tokens survive a restart. */
function localSecret(dataDirectory: string | undefined): string {
  if (!dataDirectory) return randomBytes(32).toString('base64url');
  const file = join(dataDirectory, 'auth-secret');
  if (!existsSync(file)) {
    mkdirSync(dataDirectory, { recursive: true });
    writeFileSync(file, randomBytes(32).toString('base64url'), { mode: 0o600 });
  }
  return readFileSync(file, 'utf8').trim();
}

export function readLocalSecret(dataDirectory: string): string {
  return process.env.AUTH_SECRET || localSecret(dataDirectory);
}
