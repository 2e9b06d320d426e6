import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { commaSeparated, config } from '../../shared/config.js';
import { attachmentsTable, conversationsTable, idempotencyTable, uploadSessionsTable } from '../../shared/dynamo/tables.js';
import { AUTHORIZER_ENTRY, routes } from '../routes.js';
import { REPOSITORY_ROOT } from '../repository.js';
import { ensureTables, startDynalite } from './dynamodb.js';
import { loadOpenApi, OPENAPI_PATH } from './openapi.js';
import { startS3 } from './s3.js';
import { createGateway, type LoadedRoute, type ProxyHandler, type TokenAuthorizer } from './gateway.js';

export { REPOSITORY_ROOT };

export interface LocalApiOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Where dynalite and the S3 stand-in keep their data, and the local token secret; omitted: nothing persists. */
  dataDirectory?: string;
  /** Extra environment for the handlers (e.g. a dead endpoint for fault tests). */
  env?: Record<string, string>;
  /** dynalite's and the S3 stand-in's ports (fixed for sam local's env-vars file); default: free ones. */
  dynamodbPort?: number;
  s3Port?: number;
}

export interface LocalApi {
  url: string;
  authSecret: string;
  dynamodbEndpoint: string;
  /** The S3 that holds the files; file_url links point here. */
  s3Endpoint: string;
  close(): Promise<void>;
}

/**
 * The API as `npm start` serves it: dynalite and the S3 stand-in in this
 * process, the tables created from the code's definitions, and the gateway
 * emulator in front of the real handler modules.
 */
export async function startLocalApi(options: LocalApiOptions = {}): Promise<LocalApi> {
  const host = options.host ?? '127.0.0.1';
  const region = process.env.AWS_REGION ?? 'us-east-1';
  const stoppers: (() => Promise<void>)[] = [];

  let dynamodbEndpoint = options.env?.DYNAMODB_ENDPOINT ?? process.env.DYNAMODB_ENDPOINT;
  // Tables are created on the embedded dynalite only: another endpoint is someone else's to set up.
  const embeddedDynamodb = !dynamodbEndpoint;
  if (!dynamodbEndpoint) {
    const dynamodb = await startDynalite(host, options.dataDirectory && join(options.dataDirectory, 'dynamodb'), options.dynamodbPort);
    stoppers.push(dynamodb.close);
    dynamodbEndpoint = dynamodb.endpoint;
  }
  const credentials = {
    accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? 'local',
    secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
  };
  let s3Endpoint = options.env?.S3_ENDPOINT ?? process.env.S3_ENDPOINT;
  if (!s3Endpoint) {
    const bucket = options.env?.FILES_BUCKET ?? process.env.FILES_BUCKET ?? config().filesBucket;
    const corsOrigins = commaSeparated(options.env?.CORS_ORIGINS ?? process.env.CORS_ORIGINS);
    const s3 = await startS3(host, bucket, credentials, options.dataDirectory && join(options.dataDirectory, 's3'), options.s3Port, corsOrigins);
    stoppers.push(s3.close);
    s3Endpoint = s3.endpoint;
  }
  const authSecret = process.env.AUTH_SECRET || localSecret(options.dataDirectory);

  // The handlers read their configuration from the environment, as on Lambda.
  Object.assign(process.env, {
    AWS_REGION: region,
    AWS_ACCESS_KEY_ID: credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    DYNAMODB_ENDPOINT: dynamodbEndpoint,
    S3_ENDPOINT: s3Endpoint,
    AUTH_SECRET: authSecret,
    // What Lambda sets for on-demand instances; Powertools counts a cold start only then.
    AWS_LAMBDA_INITIALIZATION_TYPE: process.env.AWS_LAMBDA_INITIALIZATION_TYPE ?? 'on-demand',
    ...options.env,
  });
  if (embeddedDynamodb) {
    const names = config();
    await ensureTables(dynamodbEndpoint, region, {
      [names.conversationsTable]: conversationsTable,
      [names.attachmentsTable]: attachmentsTable,
      [names.idempotencyTable]: idempotencyTable,
      [names.uploadSessionsTable]: uploadSessionsTable,
    });
  }

  const loaded: LoadedRoute[] = await Promise.all(
    routes.map(async (route) => ({ route, handler: (await loadModule(route.entry)).handler as ProxyHandler })),
  );
  const authorizer = (await loadModule(AUTHORIZER_ENTRY)).handler as TokenAuthorizer;
  const openApiJson = JSON.stringify(loadOpenApi());
  const server = createServer(
    createGateway({
      routes: loaded,
      authorizer,
      region,
      publicRoutes: {
        [OPENAPI_PATH]: (_request, response) => {
          response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(openApiJson) });
          response.end(openApiJson);
        },
      },
    }),
  );
  await listen(server, host, options.port ?? 3000);
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://${host}:${port}`,
    authSecret,
    dynamodbEndpoint,
    s3Endpoint,
    async close() {
      await new Promise<void>((done) => server.close(() => done()));
      server.closeAllConnections();
      for (const stop of stoppers.reverse()) await stop();
    },
  };
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
