/**
 * Runtime configuration, read from the environment. Lambda sets these from the
 * CDK stack; the local server sets them before it loads the handlers.
 */
export interface Config {
  region: string;
  conversationsTable: string;
  attachmentsTable: string;
  idempotencyTable: string;
  filesBucket: string;
  dynamodbEndpoint?: string;
  s3Endpoint?: string;
  maxFileBytes: number;
  fileUrlTtlSeconds: number;
  /** Browser origins allowed to call the API (CORS); `*` allows any. Empty: none. */
  corsOrigins: string[];
}

/** 4 MiB: base64 makes it ~5.6 MB, under Lambda's 6 MB synchronous payload. */
export const DEFAULT_MAX_FILE_BYTES = 4 * 1024 * 1024;
export const DEFAULT_FILE_URL_TTL_SECONDS = 900;
/**
 * A presigned URL dies with the temporary credentials that signed it. Lambda
 * hands a function its role's credentials without an expiry and AWS does not
 * document how long they last; an hour, the default session of an IAM role,
 * is the longest lifetime assumed (docs/deploying.md, "file_url lifetime").
 */
export const MAX_FILE_URL_TTL_SECONDS = 3600;

function positiveInteger(name: string, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value <= 0 || value > max) {
    throw new Error(`${name} must be an integer from 1 to ${max}, got ${JSON.stringify(raw)}`);
  }
  return value;
}

function optional(name: string): string | undefined {
  const raw = process.env[name];
  return raw === undefined || raw === '' ? undefined : raw;
}

/** A comma-separated list, blanks ignored (CORS_ORIGINS). */
export function commaSeparated(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

export function config(): Config {
  return {
    region: process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1',
    conversationsTable: process.env.CONVERSATIONS_TABLE ?? 'conversations',
    attachmentsTable: process.env.ATTACHMENTS_TABLE ?? 'attachments',
    idempotencyTable: process.env.IDEMPOTENCY_TABLE ?? 'idempotency',
    filesBucket: process.env.FILES_BUCKET ?? 'attachments',
    dynamodbEndpoint: optional('DYNAMODB_ENDPOINT'),
    s3Endpoint: optional('S3_ENDPOINT'),
    maxFileBytes: positiveInteger('MAX_FILE_BYTES', DEFAULT_MAX_FILE_BYTES),
    fileUrlTtlSeconds: positiveInteger('FILE_URL_TTL_SECONDS', DEFAULT_FILE_URL_TTL_SECONDS, MAX_FILE_URL_TTL_SECONDS),
    corsOrigins: commaSeparated(process.env.CORS_ORIGINS),
  };
}
