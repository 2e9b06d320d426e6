import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { TableRole } from './dynamo/tables.js';
import type { Credentials } from './s3/signer.js';
import type { ScanSettings } from './scanning/model.js';

/**
 * Runtime configuration, read once per process from an environment: on Lambda
 * the one the CDK stack sets (lambdaConfig), on the local server the one it
 * composes for its handlers (never by writing process.env).
 */
export type Environment = Readonly<Record<string, string | undefined>>;

export interface Config {
  region: string;
  conversationsTable: string;
  attachmentsTable: string;
  idempotencyTable: string;
  uploadSessionsTable: string;
  eventsTable: string;
  filesBucket: string;
  dynamodbEndpoint?: string;
  s3Endpoint?: string;
  maxFileBytes: number;
  fileUrlTtlSeconds: number;
  /** The largest file an upload session takes (MAX_UPLOAD_BYTES). */
  maxUploadBytes: number;
  /** How long an upload session takes parts and completion (UPLOAD_SESSION_TTL_SECONDS). */
  uploadSessionTtlSeconds: number;
  /** Browser origins allowed to call the API (CORS); `*` allows any. Empty: none. */
  corsOrigins: string[];
  /**
   * Fixed credentials for local stand-ins; absent on AWS, where the SDK's
   * default chain reads the function's role credentials.
   */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /**
   * What S3 calls and URLs are signed with, ahead of `credentials` and the
   * default chain (shared/files/credentials.ts): the local server's, each
   * function with a key of its own (infra/local/s3-roles.ts), as each Lambda
   * function signs with its role.
   */
  s3Credentials?: Credentials;
  /**
   * What DynamoDB calls are signed with, ahead of `credentials` and the default
   * chain: the local server's, each function with its own key, so the local
   * DynamoDB's IAM (infra/local/dynamodb-iam.ts) answers it as its role would.
   * Resolved at each call (not once per client), since one Composition serves every function.
   */
  dynamodbCredentials?: Credentials;
  /** Which tokens the authorizer accepts; checked when it first verifies one (shared/auth/verifier-settings.ts). */
  auth: AuthConfig;
  /** The Event API that pushes hints (REALTIME_URL, REALTIME_HOST); absent where none is configured. */
  realtime?: RealtimeConfig;
  /** The preview worker's queue (PREVIEW_QUEUE_URL), which the fan-out feeds; absent where no worker runs. */
  previewQueueUrl?: string;
  /** Over this size a file's preview is `failed` without being read (PREVIEW_MAX_BYTES, a deployment setting). */
  previewMaxBytes: number;
  /** Sides at which a group's thread becomes large, for good (LARGE_GROUP_SIDES, a deployment setting; docs/decisions.md). */
  largeGroupSides: number;
  /** The large threads' settling timers' queue (THREAD_SETTLING_QUEUE_URL), which the fan-out feeds as a thread becomes large. */
  threadSettlingQueueUrl?: string;
  /** Malware scanning (SCANNING, SCAN_UNSCANNABLE; docs/configuration.md). */
  scanning: ScanSettings;
  /** The scan timers' queue (SCAN_TIMER_QUEUE_URL), which the fan-out feeds; absent where scanning is off. */
  scanTimerQueueUrl?: string;
  /** Where a file is asked to be scanned again (GUARDDUTY_ENDPOINT): GuardDuty's regional endpoint unless a stand-in's is given. */
  guardDutyEndpoint?: string;
}

/**
 * Where clients connect for pushes and where the publisher posts them: the
 * Event API's real-time WebSocket URL (`wss://…/event/realtime`) and its HTTP
 * domain (the `host` a client signs its connection with). The publisher posts
 * to the HTTP domain, over https when the URL is wss (AWS) and http when it
 * is ws (the local server).
 */
export interface RealtimeConfig {
  url: string;
  host: string;
}

/**
 * The authorizer's settings: a JWKS URL (AUTH_JWKS_URL), or an HS256 secret
 * given inline (AUTH_SECRET, local) or by reference (AUTH_SECRET_ARN, the
 * deployed stack, read through the Parameters and Secrets Lambda Extension).
 * Empty values are unset.
 */
export interface AuthConfig {
  jwksUrl?: string;
  secret?: string;
  secretArn?: string;
  issuer?: string;
  audience?: string;
  /** GROUPS_CLAIM: the claim that holds the user's groups, as given (checked by shared/auth/groups.ts). */
  groupsClaim?: string;
  /** The Parameters and Secrets Lambda Extension's port (PARAMETERS_SECRETS_EXTENSION_HTTP_PORT). */
  secretsExtensionPort: string;
}

/** The Parameters and Secrets Lambda Extension's default port. */
export const DEFAULT_SECRETS_EXTENSION_PORT = '2773';

/** 4 MiB: base64 makes it ~5.6 MB, under Lambda's 6 MB synchronous payload. */
export const DEFAULT_MAX_FILE_BYTES = 4 * 1024 * 1024;
export const DEFAULT_FILE_URL_TTL_SECONDS = 900;
/** 5 GiB: S3's largest single PUT, and what upload sessions take by default (docs/api.md). */
export const DEFAULT_MAX_UPLOAD_BYTES = 5 * 1024 ** 3;
/** S3's own ceiling for one object (10,000 parts of 5 GiB are more; S3 caps the object). */
export const S3_MAX_OBJECT_BYTES = 5 * 1024 ** 4;
/** 100 MiB (docs/api.md, "Previews"): the preview worker reads a file whole, and its memory is sized for this (infra/declarations/function-settings.ts). */
export const DEFAULT_PREVIEW_MAX_BYTES = 100 * 1024 * 1024;
/** A small group's fan-out writes each side and stays within its 2 s up to about this many (docs/decisions.md, "Large groups"). */
export const DEFAULT_LARGE_GROUP_SIDES = 100;
/** 15 minutes (docs/api.md, "Scanning"): a file with no scan result by then is unscannable. */
export const DEFAULT_SCAN_TIMEOUT_SECONDS = 900;
/** The longest scan timeout: SQS's longest DelaySeconds, the scan timer's one wait (docs/decisions.md, "The scan timeout"). */
export const MAX_SCAN_TIMEOUT_SECONDS = 900;
/** 24 hours, the S3 lifecycle rule's one day of AbortIncompleteMultipartUpload. */
export const DEFAULT_UPLOAD_SESSION_TTL_SECONDS = 24 * 3600;
/**
 * A presigned URL dies with the temporary credentials that signed it. Lambda
 * hands a function its role's credentials without an expiry and AWS does not
 * document how long they last; an hour, the default session of an IAM role,
 * is the longest lifetime assumed (docs/deploying.md, "file_url lifetime").
 */
export const MAX_FILE_URL_TTL_SECONDS = 3600;

function positiveInteger(env: Environment, name: string, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (!raw) return fallback; // unset or empty
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value <= 0 || value > max) {
    throw new Error(`${name} must be an integer from 1 to ${max}, got ${JSON.stringify(raw)}`);
  }
  return value;
}

/** One of `values`; unset or empty: `fallback`. */
function oneOf<T extends string>(env: Environment, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (!raw) return fallback;
  if (!values.includes(raw as T)) throw new Error(`${name} must be one of ${values.join(', ')}, got ${JSON.stringify(raw)}`);
  return raw as T;
}

/** Unset or empty: undefined. */
function optional(env: Environment, name: string): string | undefined {
  return env[name] || undefined;
}

/** A comma-separated list, blanks ignored (CORS_ORIGINS). */
export function commaSeparated(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

/** The variables that name the tables, by their role: readConfig reads them, the stack and the local server set them. */
export const TABLE_VARIABLES = {
  conversations: 'CONVERSATIONS_TABLE',
  attachments: 'ATTACHMENTS_TABLE',
  idempotency: 'IDEMPOTENCY_TABLE',
  uploadSessions: 'UPLOAD_SESSIONS_TABLE',
  events: 'EVENTS_TABLE',
} as const satisfies Record<TableRole, string>;

/** The environment that names each table: its variable, the name `nameOf` gives it. */
export function tableVariables(nameOf: (role: TableRole) => string): Record<string, string> {
  return Object.fromEntries(Object.entries(TABLE_VARIABLES).map(([role, variable]) => [variable, nameOf(role as TableRole)]));
}

export function readConfig(env: Environment): Config {
  refuseUnhonouredS3Settings(env);
  return {
    region: env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
    conversationsTable: env[TABLE_VARIABLES.conversations] ?? 'conversations',
    attachmentsTable: env[TABLE_VARIABLES.attachments] ?? 'attachments',
    idempotencyTable: env[TABLE_VARIABLES.idempotency] ?? 'idempotency',
    uploadSessionsTable: env[TABLE_VARIABLES.uploadSessions] ?? 'upload_sessions',
    eventsTable: env[TABLE_VARIABLES.events] ?? 'events',
    filesBucket: env.FILES_BUCKET ?? 'attachments',
    dynamodbEndpoint: optional(env, 'DYNAMODB_ENDPOINT'),
    s3Endpoint: optional(env, 'S3_ENDPOINT'),
    maxFileBytes: positiveInteger(env, 'MAX_FILE_BYTES', DEFAULT_MAX_FILE_BYTES),
    fileUrlTtlSeconds: positiveInteger(env, 'FILE_URL_TTL_SECONDS', DEFAULT_FILE_URL_TTL_SECONDS, MAX_FILE_URL_TTL_SECONDS),
    maxUploadBytes: positiveInteger(env, 'MAX_UPLOAD_BYTES', DEFAULT_MAX_UPLOAD_BYTES, S3_MAX_OBJECT_BYTES),
    uploadSessionTtlSeconds: positiveInteger(env, 'UPLOAD_SESSION_TTL_SECONDS', DEFAULT_UPLOAD_SESSION_TTL_SECONDS),
    corsOrigins: commaSeparated(env.CORS_ORIGINS),
    previewQueueUrl: optional(env, 'PREVIEW_QUEUE_URL'),
    previewMaxBytes: positiveInteger(env, 'PREVIEW_MAX_BYTES', DEFAULT_PREVIEW_MAX_BYTES),
    largeGroupSides: positiveInteger(env, 'LARGE_GROUP_SIDES', DEFAULT_LARGE_GROUP_SIDES),
    threadSettlingQueueUrl: optional(env, 'THREAD_SETTLING_QUEUE_URL'),
    scanning: {
      enabled: oneOf(env, 'SCANNING', ['on', 'off'], 'on') === 'on',
      serveUnscannable: oneOf(env, 'SCAN_UNSCANNABLE', ['hold', 'serve'], 'hold') === 'serve',
      timeoutSeconds: positiveInteger(env, 'SCAN_TIMEOUT_SECONDS', DEFAULT_SCAN_TIMEOUT_SECONDS, MAX_SCAN_TIMEOUT_SECONDS),
    },
    guardDutyEndpoint: optional(env, 'GUARDDUTY_ENDPOINT'),
    scanTimerQueueUrl: optional(env, 'SCAN_TIMER_QUEUE_URL'),
    auth: {
      jwksUrl: optional(env, 'AUTH_JWKS_URL'),
      secret: optional(env, 'AUTH_SECRET'),
      secretArn: optional(env, 'AUTH_SECRET_ARN'),
      issuer: optional(env, 'AUTH_ISSUER'),
      audience: optional(env, 'AUTH_AUDIENCE'),
      groupsClaim: optional(env, 'GROUPS_CLAIM'),
      secretsExtensionPort: optional(env, 'PARAMETERS_SECRETS_EXTENSION_HTTP_PORT') ?? DEFAULT_SECRETS_EXTENSION_PORT,
    },
    ...realtimeConfig(env),
  };
}

function realtimeConfig(env: Environment): { realtime?: RealtimeConfig } {
  const url = optional(env, 'REALTIME_URL');
  const host = optional(env, 'REALTIME_HOST');
  if (!url && !host) return {};
  if (!url || !host || !/^wss?:\/\/[^/]+\/event\/realtime$/.test(url) || !/^[A-Za-z0-9.-]+(:\d{1,5})?$/.test(host)) {
    throw new Error(
      `REALTIME_URL (ws:// or wss://<domain>/event/realtime) and REALTIME_HOST (the Event API's HTTP domain) go together, got ${JSON.stringify({ url, host })}`,
    );
  }
  return { realtime: { url, host } };
}

/**
 * The AWS settings that change where the S3 client sends its requests, and
 * that the S3 layer (shared/s3/) does not read: it addresses the regional
 * endpoint or S3_ENDPOINT, never a FIPS or dual-stack one, and never an
 * endpoint URL of the SDK's configuration. Ignored, they would send files
 * where the operator said they must not go; so a process refuses to start
 * with them, whether they come from the environment or, as the SDK also
 * reads them, from the shared config file's profile (environment first, as
 * the SDK decides). Lambda has no shared config file; a developer's may.
 */
export function refuseUnhonouredS3Settings(env: Environment, sharedConfig: SharedConfig = readSharedConfig(env)): void {
  const { profile, services } = sharedConfig;
  const flag = (variable: string, key: string) => (env[variable] ?? profile[key])?.trim().toLowerCase() === 'true';
  const found: string[] = [];
  if (flag('AWS_USE_FIPS_ENDPOINT', 'use_fips_endpoint')) found.push('AWS_USE_FIPS_ENDPOINT (use_fips_endpoint)');
  if (flag('AWS_USE_DUALSTACK_ENDPOINT', 'use_dualstack_endpoint')) found.push('AWS_USE_DUALSTACK_ENDPOINT (use_dualstack_endpoint)');
  if (!flag('AWS_IGNORE_CONFIGURED_ENDPOINT_URLS', 'ignore_configured_endpoint_urls')) {
    const endpointUrl = [
      ['AWS_ENDPOINT_URL_S3', env.AWS_ENDPOINT_URL_S3],
      ['AWS_ENDPOINT_URL', env.AWS_ENDPOINT_URL],
      ['endpoint_url of s3 in the services section', services.s3?.endpoint_url],
      ["the profile's endpoint_url", profile.endpoint_url],
    ].find(([, value]) => value !== undefined && value !== '');
    if (endpointUrl) found.push(`${endpointUrl[0]} (set S3_ENDPOINT for another S3)`);
  }
  if (found.length > 0) {
    throw new Error(
      `These AWS settings would move S3 requests, and this service's S3 layer does not honour them: ${found.join('; ')}. ` +
        'Its S3 calls and file_url links go to the regional S3 endpoint, or to S3_ENDPOINT (docs/configuration.md). Unset them to start.',
    );
  }
}

/** What the shared config file holds for the profile in use: its keys, and its services section's per-service keys. */
export interface SharedConfig {
  profile: Record<string, string>;
  services: Record<string, Record<string, string>>;
}

/** The shared config file (AWS_CONFIG_FILE, else ~/.aws/config) as the SDK reads it for the profile (AWS_PROFILE, else default). */
export function readSharedConfig(env: Environment): SharedConfig {
  let text: string;
  try {
    text = readFileSync(env.AWS_CONFIG_FILE ?? join(homedir(), '.aws', 'config'), 'utf8');
  } catch {
    return { profile: {}, services: {} };
  }
  const sections = iniSections(text);
  const name = env.AWS_PROFILE ?? 'default';
  const profile = sections.get(name === 'default' ? 'default' : `profile ${name}`) ?? sections.get(`profile ${name}`) ?? {};
  const services: Record<string, Record<string, string>> = {};
  // A services section nests one level: `s3 =` then indented `endpoint_url = ...`.
  for (const [key, value] of Object.entries(sections.get(`services ${profile.services ?? ''}`) ?? {})) {
    const [service, setting] = key.split('.');
    if (service && setting) services[service] = { ...services[service], [setting]: value };
  }
  return { profile, services };
}

/** An INI file's sections; an indented line under `key =` is `key.sub`, as in the SDK's parser. */
function iniSections(text: string): Map<string, Record<string, string>> {
  const sections = new Map<string, Record<string, string>>();
  let current: Record<string, string> | undefined;
  let parent: string | undefined;
  for (const line of text.split(/\r?\n/)) {
    const header = /^\s*\[([^\]]+)\]/.exec(line);
    if (header) {
      current = {};
      sections.set((header[1] ?? '').trim().replace(/\s+/g, ' '), current);
      parent = undefined;
      continue;
    }
    const entry = /^(\s*)([^=#;\s][^=]*?)\s*=\s*(.*?)\s*$/.exec(line);
    if (!current || !entry) continue;
    const [, indent, key, value] = entry as unknown as [string, string, string, string];
    if (indent === '') {
      current[key.toLowerCase()] = value;
      parent = value === '' ? key.toLowerCase() : undefined;
    } else if (parent) {
      current[`${parent}.${key.toLowerCase()}`] = value;
    }
  }
  return sections;
}

let processConfig: Config | undefined;

/** The configuration of a Lambda process: its environment, read once (by its Composition, or by the authorizer). */
export function lambdaConfig(): Config {
  processConfig ??= readConfig(process.env);
  return processConfig;
}
