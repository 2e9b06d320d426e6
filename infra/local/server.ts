import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { App } from '../../shared/app.js';
import { groupsClaimName } from '../../shared/auth/groups.js';
import { CHANGES_FILTER_PATTERN, type FilterPattern, REMOVALS_FILTER_PATTERN } from '../../shared/cleanup/stream-events.js';
import { type Config, type Environment, readConfig } from '../../shared/config.js';
import {
  attachmentsTable,
  conversationsTable,
  eventsTable,
  idempotencyTable,
  type TableDefinition,
  uploadSessionsTable,
} from '../../shared/dynamo/tables.js';
import { BUS_FILTER_PATTERN } from '../../shared/events/bus.js';
import type { HttpHandler } from '../../shared/http/handler.js';
import { logger } from '../../shared/observability.js';
import type { EventApiAuthorizerEvent, EventApiAuthorizerResult } from '../../shared/realtime/authorization.js';
import { REALTIME_NAMESPACE, REALTIME_PATH } from '../../shared/realtime/channel.js';
import { routes } from '../../shared/routes.js';
import type { StreamHandler } from '../../shared/stream-consumer.js';
import type { Clock } from '../../shared/time.js';
import { channelNamespaceArn, type Permission, realtimePublisherPermissions } from '../permissions.js';
import { REPOSITORY_ROOT } from '../repository.js';
import {
  AUTHORIZER_ENTRY,
  CLEANUP_ENTRY,
  CONSUMER_TIMEOUT_SECONDS,
  FAN_OUT_ENTRY,
  FUNCTION_TIMEOUT_SECONDS,
  REALTIME_AUTHORIZER_ENTRY,
  REALTIME_PUBLISHER_ENTRY,
} from '../stack-functions.js';
import { lockDataDirectory } from './data-lock.js';
import { ensureTables, startDynamoDbLocal } from './dynamodb.js';
import { startDynamoDbEnforcer } from './dynamodb-iam.js';
import { eventsForwarder } from './events-forwarder.js';
import { answerClientError, createGateway, LOCAL_ACCOUNT, type LoadedRoute, type TokenAuthorizer } from './gateway.js';
import {
  actingAs,
  CLEANUP_FUNCTION,
  EVENTS_PIPE,
  FAN_OUT_FUNCTION,
  functionCredentials,
  functionKeyId,
  type GrantsOverride,
  localIam,
  REALTIME_PUBLISHER_FUNCTION,
} from './iam.js';
import { loadOpenApi, OPENAPI_PATH } from './openapi.js';
import { attachRealtime, type LocalRealtime } from './realtime.js';
import { startS3 } from './s3.js';
import { readLocalSettings } from './settings.js';
import { type StreamPollerOptions, startStreamPoller } from './stream-poller.js';
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
  /**
   * The functions' permissions the local DynamoDB and S3 enforce, from those the stack grants
   * (infra/local/iam.ts); default: as granted. A test takes one away to prove what needs it.
   */
  grants?: GrantsOverride;
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
  /** The App (clients, services) the handlers run on. */
  app: App;
  /** The Event API's stand-in: its WebSocket URL and HTTP host (what GET /v1/realtime answers), its connections. */
  realtime: LocalRealtime & { url: string; host: string };
  /** Every call of a function the local IAM refused (DynamoDB's and S3's), in AWS's words, each once. */
  iamRefusals(): string[];
  close(): Promise<void>;
}

/**
 * The API as `npm start` serves it: DynamoDB Local (a child process) and the
 * S3 stand-in, the tables created from the code's definitions, and the gateway
 * emulator in front of the real handler modules, run on an App built from
 * this server's settings.
 */
export async function startLocalApi(options: LocalApiOptions = {}): Promise<LocalApi> {
  const host = options.host ?? '127.0.0.1';
  const functionTimeoutMs = options.functionTimeoutMs ?? FUNCTION_TIMEOUT_SECONDS * 1000;
  const env: Environment = { ...process.env, ...options.env };
  const { streamConsumers, eventsForwardUrl } = readLocalSettings(env);
  const region = env.AWS_REGION ?? 'us-east-1';
  const credentials = { accessKeyId: env.AWS_ACCESS_KEY_ID ?? 'local', secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? 'local' };
  const stoppers: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stoppers.reverse()) await stop();
  };

  try {
    if (options.dataDirectory) {
      const lock = lockDataDirectory(options.dataDirectory);
      if (lock.takenOverFrom !== undefined)
        logger.warn(
          `took over the data folder ${options.dataDirectory} from process ${lock.takenOverFrom}, which ended without releasing it`,
        );
      stoppers.push(async () => lock.release());
    }
    const names = readConfig(env);
    let tables = {
      conversations: names.conversationsTable,
      attachments: names.attachmentsTable,
      idempotency: names.idempotencyTable,
      uploadSessions: names.uploadSessionsTable,
      events: names.eventsTable,
    };
    // Tables are created where this server owns the data (its own DynamoDB Local, or its prefix of a shared one);
    // another endpoint is someone else's to set up.
    let dynamodbEndpoint = options.env?.DYNAMODB_ENDPOINT ?? (options.sharedDynamodb ? undefined : env.DYNAMODB_ENDPOINT);
    let createTables = false;
    if (!dynamodbEndpoint && options.sharedDynamodb) {
      const { endpoint, tablePrefix } = options.sharedDynamodb;
      dynamodbEndpoint = endpoint;
      tables = {
        conversations: tablePrefix + tables.conversations,
        attachments: tablePrefix + tables.attachments,
        idempotency: tablePrefix + tables.idempotency,
        uploadSessions: tablePrefix + tables.uploadSessions,
        events: tablePrefix + tables.events,
      };
      createTables = true;
    } else if (!dynamodbEndpoint) {
      const dynamodb = await startDynamoDbLocal(
        host,
        options.dataDirectory && join(options.dataDirectory, 'dynamodb'),
        options.dynamodbPort,
      );
      stoppers.push(dynamodb.close);
      dynamodbEndpoint = dynamodb.endpoint;
      createTables = true;
    }
    if (createTables) {
      await ensureTables(dynamodbEndpoint, region, credentials, {
        [tables.conversations]: conversationsTable,
        [tables.attachments]: attachmentsTable,
        [tables.idempotency]: idempotencyTable,
        [tables.uploadSessions]: uploadSessionsTable,
        [tables.events]: eventsTable,
      });
    }
    // Every function's role as the stack grants it over this server's tables and bucket, enforced by both stand-ins.
    const iam = localIam(credentials, { account: LOCAL_ACCOUNT, region, tables, bucket: names.filesBucket }, options.grants);
    // IAM in front of a DynamoDB without it (DynamoDB Local, whoever started it); a DynamoDB over HTTPS is AWS's, which has its own.
    let functionsDynamodb = dynamodbEndpoint;
    const enforcing = new URL(dynamodbEndpoint).protocol === 'http:';
    if (enforcing) {
      const enforcer = await startDynamoDbEnforcer({
        host,
        upstream: dynamodbEndpoint,
        evaluator: iam,
        resources: { account: LOCAL_ACCOUNT, region },
      });
      stoppers.push(enforcer.close);
      functionsDynamodb = enforcer.endpoint;
    }
    let s3Endpoint = env.S3_ENDPOINT;
    if (!s3Endpoint) {
      const s3 = await startS3(
        host,
        names.filesBucket,
        credentials,
        options.dataDirectory && join(options.dataDirectory, 's3'),
        options.s3Port,
        names.corsOrigins,
        iam,
      );
      stoppers.push(s3.close);
      s3Endpoint = s3.endpoint;
    }
    const authSecret = env.AUTH_SECRET || localSecret(options.dataDirectory);

    // Listening first: the port is part of the real-time endpoint the handlers answer (GET /v1/realtime).
    let handle: (request: IncomingMessage, response: ServerResponse) => void = (_request, response) => {
      response.writeHead(503, { 'content-length': 0 });
      response.end();
    };
    const server = createServer((request, response) => handle(request, response));
    server.on('clientError', answerClientError);
    await listen(server, host, options.port ?? 3000);
    stoppers.push(async () => {
      await new Promise<void>((done) => server.close(() => done()));
      server.closeAllConnections();
    });
    const { port } = server.address() as AddressInfo;
    const realtimeHost = `${host}:${port}`;

    // What the handlers see, as Lambda's environment: passed to them, not written to process.env.
    const realtimeUrl = `ws://${realtimeHost}${REALTIME_PATH}`;
    const handlerEnv: Environment = {
      ...env,
      AWS_REGION: region,
      DYNAMODB_ENDPOINT: functionsDynamodb,
      S3_ENDPOINT: s3Endpoint,
      AUTH_SECRET: authSecret,
      CONVERSATIONS_TABLE: tables.conversations,
      ATTACHMENTS_TABLE: tables.attachments,
      IDEMPOTENCY_TABLE: tables.idempotency,
      UPLOAD_SESSIONS_TABLE: tables.uploadSessions,
      EVENTS_TABLE: tables.events,
      REALTIME_URL: realtimeUrl,
      REALTIME_HOST: realtimeHost,
      // What a test sets explicitly wins (e.g. an empty AUTH_SECRET, to make the authorizer read AUTH_SECRET_ARN).
      ...options.env,
    };
    // A stand-in of ours (this server's, or one a test hands over) knows each function's key; an S3 the user
    // configured in the environment (MinIO) knows the user's.
    const standInS3 = !process.env.S3_ENDPOINT || options.env?.S3_ENDPOINT !== undefined;
    const config: Config = {
      ...readConfig(handlerEnv),
      credentials,
      ...(standInS3 ? { s3Credentials: functionCredentials(credentials) } : {}),
      ...(enforcing ? { dynamodbCredentials: functionCredentials(credentials) } : {}),
    };
    const app = new App(config, options.clock);
    stoppers.push(async () => app.destroy());
    // Powertools (a library) reads this Lambda variable itself: on-demand instances count a cold start.
    process.env.AWS_LAMBDA_INITIALIZATION_TYPE ??= 'on-demand';

    const loaded: LoadedRoute[] = await Promise.all(
      routes.map(async (route) => ({
        route,
        handler: actingAs(route.name, ((await loadModule(route.entry)).handler as HttpHandler<App>).withApp(app)),
      })),
    );
    if (streamConsumers) {
      // What the stack's event source mappings run (the cleanup, the fan-out), on whatever DynamoDB the handlers
      // use: tables someone else made may lack the stream, which each poller says once per table.
      const consumer = async (entry: string) => ((await loadModule(entry)).handler as { withApp(app: App): StreamHandler }).withApp(app);
      const consumerTimeoutMs = options.consumerTimeoutMs ?? CONSUMER_TIMEOUT_SECONDS * 1000;
      // Each reads its streams as its role (the event source mapping's, the pipe's) through the IAM in front.
      const poller = (
        reader: string,
        streamTables: Record<string, TableDefinition>,
        filter: FilterPattern,
        handler: StreamPollerOptions['handler'],
        timeoutMs = consumerTimeoutMs,
      ) =>
        startStreamPoller({
          endpoint: functionsDynamodb,
          region,
          credentials,
          streamCredentials: enforcing ? { ...credentials, accessKeyId: functionKeyId(credentials, reader) } : credentials,
          tables: Object.entries(streamTables).flatMap(([name, { stream }]) => (stream ? [{ name, stream }] : [])),
          filter,
          handler,
          functionTimeoutMs: timeoutMs,
        });
      const cleanup = poller(
        CLEANUP_FUNCTION,
        {
          [tables.conversations]: conversationsTable,
          [tables.attachments]: attachmentsTable,
          [tables.uploadSessions]: uploadSessionsTable,
        },
        REMOVALS_FILTER_PATTERN,
        actingAs(CLEANUP_FUNCTION, await consumer(CLEANUP_ENTRY)),
      );
      const fanOut = poller(
        FAN_OUT_FUNCTION,
        { [tables.attachments]: attachmentsTable },
        CHANGES_FILTER_PATTERN,
        actingAs(FAN_OUT_FUNCTION, await consumer(FAN_OUT_ENTRY)),
      );
      // What DynamoDB's TTL does on AWS, for the upload intents of the attachments table: an intent its run
      // left behind expires, and its REMOVE reaches the cleanup. (The other tables' TTL is not run: see
      // docs/consistency.md, "DynamoDB Local and AWS".) DynamoDB's own deletes: no role, straight to the table.
      const timeToLive = startTimeToLive({
        endpoint: dynamodbEndpoint,
        region,
        credentials,
        table: { name: tables.attachments, definition: attachmentsTable },
        functionTimeoutMs,
      });
      stoppers.push(cleanup.stop, fanOut.stop, timeToLive.stop);
      // What the stack's publisher mapping runs: a hint per new event item, published to the Event API below, as its own function.
      const publisher = poller(
        REALTIME_PUBLISHER_FUNCTION,
        { [tables.events]: eventsTable },
        BUS_FILTER_PATTERN,
        actingAs(REALTIME_PUBLISHER_FUNCTION, await consumer(REALTIME_PUBLISHER_ENTRY)),
      );
      stoppers.push(publisher.stop);
      if (eventsForwardUrl) {
        // What the stack's events pipe does: new event items to the operators' bus, here POSTed to EVENTS_FORWARD_URL.
        const forwarding = new AbortController();
        const forwarder = poller(
          EVENTS_PIPE,
          { [tables.events]: eventsTable },
          BUS_FILTER_PATTERN,
          eventsForwarder({ url: eventsForwardUrl, region, account: LOCAL_ACCOUNT, signal: forwarding.signal }),
          // The pipe's enrichment is a function of the API's settings.
          functionTimeoutMs,
        );
        stoppers.push(async () => {
          // Stopping first, so that the delivery the abort ends is not reported as a failure to retry.
          const stopped = forwarder.stop();
          forwarding.abort();
          await stopped;
        });
      }
    }
    const authorizer = ((await loadModule(AUTHORIZER_ENTRY)).handler as { withConfig(config: Config): TokenAuthorizer }).withConfig(config);
    const realtimeAuthorizer = (
      (await loadModule(REALTIME_AUTHORIZER_ENTRY)).handler as {
        withConfig(config: Config): (event: EventApiAuthorizerEvent) => Promise<EventApiAuthorizerResult>;
      }
    ).withConfig(config);
    // Which local keys may publish: those whose role's permissions grant appsync:EventPublish on the namespace, as IAM answers.
    const namespaceArn = channelNamespaceArn({ region, account: LOCAL_ACCOUNT, apiId: 'local' }, REALTIME_NAMESPACE);
    const publishingRoles = new Map<string, Permission[]>([
      [functionKeyId(credentials, REALTIME_PUBLISHER_FUNCTION), realtimePublisherPermissions(namespaceArn)],
    ]);
    const realtime = attachRealtime(server, {
      authorizer: realtimeAuthorizer,
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
    stoppers.push(realtime.close);
    const openApiJson = JSON.stringify(loadOpenApi());
    const gateway = createGateway({
      routes: loaded,
      authorizer,
      region,
      functionTimeoutMs,
      corsOrigins: config.corsOrigins,
      publicRoutes: {
        [OPENAPI_PATH]: (_request, response) => {
          response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(openApiJson) });
          response.end(openApiJson);
        },
      },
    });
    handle = (request, response) => {
      if (!realtime.handleRequest(request, response)) void gateway(request, response);
    };

    return {
      url: `http://${host}:${port}`,
      authSecret,
      groupsClaim: groupsClaimName(handlerEnv.GROUPS_CLAIM),
      dynamodbEndpoint,
      s3Endpoint,
      config,
      app,
      realtime: Object.assign(realtime, { url: handlerEnv.REALTIME_URL ?? realtimeUrl, host: realtimeHost }),
      iamRefusals: () => [...iam.refused],
      close: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
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
