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
  /** Which tokens the authorizer accepts; checked when it first verifies one (shared/auth/settings.ts). */
  auth: AuthConfig;
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
  /** The Parameters and Secrets Lambda Extension's port (PARAMETERS_SECRETS_EXTENSION_HTTP_PORT). */
  secretsExtensionPort: string;
}

/** The Parameters and Secrets Lambda Extension's default port. */
export const DEFAULT_SECRETS_EXTENSION_PORT = '2773';

/** 4 MiB: base64 makes it ~5.6 MB, under Lambda's 6 MB synchronous payload. */
export const DEFAULT_MAX_FILE_BYTES = 4 * 1024 * 1024;
export const DEFAULT_FILE_URL_TTL_SECONDS = 900;
/** 5 GiB: S3's largest single PUT, and what the upload sessions of API.md promise by default. */
export const DEFAULT_MAX_UPLOAD_BYTES = 5 * 1024 ** 3;
/** S3's own ceiling for one object (10,000 parts of 5 GiB are more; S3 caps the object). */
export const S3_MAX_OBJECT_BYTES = 5 * 1024 ** 4;
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

export function readConfig(env: Environment): Config {
  return {
    region: env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
    conversationsTable: env.CONVERSATIONS_TABLE ?? 'conversations',
    attachmentsTable: env.ATTACHMENTS_TABLE ?? 'attachments',
    idempotencyTable: env.IDEMPOTENCY_TABLE ?? 'idempotency',
    uploadSessionsTable: env.UPLOAD_SESSIONS_TABLE ?? 'upload_sessions',
    filesBucket: env.FILES_BUCKET ?? 'attachments',
    dynamodbEndpoint: optional(env, 'DYNAMODB_ENDPOINT'),
    s3Endpoint: optional(env, 'S3_ENDPOINT'),
    maxFileBytes: positiveInteger(env, 'MAX_FILE_BYTES', DEFAULT_MAX_FILE_BYTES),
    fileUrlTtlSeconds: positiveInteger(env, 'FILE_URL_TTL_SECONDS', DEFAULT_FILE_URL_TTL_SECONDS, MAX_FILE_URL_TTL_SECONDS),
    maxUploadBytes: positiveInteger(env, 'MAX_UPLOAD_BYTES', DEFAULT_MAX_UPLOAD_BYTES, S3_MAX_OBJECT_BYTES),
    uploadSessionTtlSeconds: positiveInteger(env, 'UPLOAD_SESSION_TTL_SECONDS', DEFAULT_UPLOAD_SESSION_TTL_SECONDS),
    corsOrigins: commaSeparated(env.CORS_ORIGINS),
    auth: {
      jwksUrl: optional(env, 'AUTH_JWKS_URL'),
      secret: optional(env, 'AUTH_SECRET'),
      secretArn: optional(env, 'AUTH_SECRET_ARN'),
      issuer: optional(env, 'AUTH_ISSUER'),
      audience: optional(env, 'AUTH_AUDIENCE'),
      secretsExtensionPort: optional(env, 'PARAMETERS_SECRETS_EXTENSION_HTTP_PORT') ?? DEFAULT_SECRETS_EXTENSION_PORT,
    },
  };
}

let processConfig: Config | undefined;

/** The configuration of a Lambda process: its environment, read once (by its App, or by the authorizer). */
export function lambdaConfig(): Config {
  processConfig ??= readConfig(process.env);
  return processConfig;
}
