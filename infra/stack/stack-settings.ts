import type { Node } from 'constructs';
import { groupsClaimName } from '../../shared/auth/groups.js';
import {
  commaSeparated,
  DEFAULT_FILE_URL_TTL_SECONDS,
  DEFAULT_LARGE_GROUP_SIDES,
  DEFAULT_MAX_FILE_BYTES,
  DEFAULT_MAX_UPLOAD_BYTES,
  DEFAULT_PREVIEW_MAX_BYTES,
  DEFAULT_SCAN_TIMEOUT_SECONDS,
  DEFAULT_UPLOAD_SESSION_TTL_SECONDS,
  MAX_FILE_URL_TTL_SECONDS,
  MAX_SCAN_TIMEOUT_SECONDS,
  S3_MAX_OBJECT_BYTES,
} from '../../shared/config.js';
import { FUNCTION_SETTINGS } from '../declarations/function-settings.js';

/**
 * What a deployment may choose, from CDK context (`-c key=value` or cdk.json).
 * Everything has a safe default, so `npx cdk synth` needs no flags.
 */
export interface StackSettings {
  /** Throw-away dev stack: tables, bucket and logs are destroyed with the stack. */
  ephemeral: boolean;
  /**
   * A template for `sam local` only: no Parameters and Secrets extension layer
   * (sam would have to download it from AWS with credentials; locally the
   * authorizer takes AUTH_SECRET from the env-vars file instead).
   */
  samLocal: boolean;
  /** Browser origins allowed to call the API (preflight, gateway responses, CORS_ORIGINS of the functions) and to GET files (bucket CORS); none by default. */
  corsOrigins: string[];
  auth: AuthSettings;
  throttling: { rateLimit: number; burstLimit: number };
  /** The functions' MAX_FILE_BYTES and FILE_URL_TTL_SECONDS (defaults from shared/config.ts). */
  maxFileBytes: number;
  fileUrlTtlSeconds: number;
  /** The functions' MAX_UPLOAD_BYTES and UPLOAD_SESSION_TTL_SECONDS; the bucket's lifecycle rule follows the latter. */
  maxUploadBytes: number;
  uploadSessionTtlSeconds: number;
  /** The preview worker's PREVIEW_MAX_BYTES: at most the default, which its memory is sized for (PREVIEW_MEMORY_MB). */
  previewMaxBytes: number;
  /** The functions' architecture: FUNCTION_SETTINGS' arm64 (Graviton) unless x86_64 is chosen. */
  architecture: 'arm64' | 'x86_64';
  /** Bundling takes sharp from npm's cache and fails rather than download (the tests synthesize so). */
  offlineBundling: boolean;
  /** The fan-out's LARGE_GROUP_SIDES: the sides at which a group's thread becomes large (shared/config.ts). */
  largeGroupSides: number;
  /** GuardDuty's malware scanning of the files (context `scanning`, `off` for regions without Malware Protection for S3). */
  scanning: boolean;
  /** Whether an unscannable file reaches other readers (context `scanUnscannable`: `hold`, the default, or `serve`). */
  scanUnscannable: 'hold' | 'serve';
  /** A file with no scan result this long after its upload is unscannable (context `scanTimeoutSeconds`, 900, at most 900). */
  scanTimeoutSeconds: number;
}

/**
 * HS256 with a secret the stack creates in Secrets Manager, or an OIDC
 * issuer's JWKS (e.g. Cognito); `groupsClaim`: the authorizer's GROUPS_CLAIM.
 */
export type AuthSettings =
  | { mode: 'secret'; issuer?: string; audience?: string; groupsClaim: string }
  | { mode: 'jwks'; jwksUrl: string; issuer?: string; audience?: string; groupsClaim: string };

/** Lambda's synchronous payload limit (6 MB) holds a 4 MiB file once base64 has grown it by a third. */
export const MAX_DEPLOYABLE_FILE_BYTES = DEFAULT_MAX_FILE_BYTES;

function architectureOf(value: string | undefined): StackSettings['architecture'] {
  if (value === undefined) return FUNCTION_SETTINGS.architecture;
  if (value === 'arm64' || value === 'x86_64') return value;
  throw new Error(`Context architecture must be arm64 or x86_64, got ${JSON.stringify(value)}`);
}

export function stackSettings(node: Node): StackSettings {
  const text = (key: string): string | undefined => {
    const value: unknown = node.tryGetContext(key);
    if (value === undefined || value === null || value === '') return undefined;
    if (Array.isArray(value)) return value.join(',');
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      throw new Error(`Context ${key} must be a string`);
    }
    return String(value);
  };
  const integer = (key: string, max = Number.MAX_SAFE_INTEGER): number | undefined => {
    const raw = text(key);
    if (raw === undefined) return undefined;
    const value = Number(raw);
    if (!Number.isSafeInteger(value) || value <= 0 || value > max) {
      throw new Error(`Context ${key} must be an integer from 1 to ${max}, got ${JSON.stringify(raw)}`);
    }
    return value;
  };

  const oneOf = <T extends string>(key: string, values: readonly T[], fallback: T): T => {
    const raw = text(key) ?? fallback;
    if (!values.includes(raw as T)) throw new Error(`Context ${key} must be one of ${values.join(', ')}, got ${JSON.stringify(raw)}`);
    return raw as T;
  };

  const issuer = text('authIssuer');
  const audience = text('authAudience');
  const jwksUrl = text('authJwksUrl');
  // `cognito:groups` for a Cognito user pool; refused at synth if it names no claim the authorizer could read.
  const groupsClaim = groupsClaimName(text('authGroupsClaim'));
  if (jwksUrl !== undefined && !/^https:\/\//.test(jwksUrl)) throw new Error('Context authJwksUrl must be an https:// URL');
  // Default none, as CORS_ORIGINS: a deployment names the web apps it serves.
  const corsOrigins = commaSeparated(text('corsOrigins'));

  return {
    ephemeral: text('ephemeral') === 'true',
    samLocal: text('samLocal') === 'true',
    corsOrigins,
    auth: jwksUrl ? { mode: 'jwks', jwksUrl, issuer, audience, groupsClaim } : { mode: 'secret', issuer, audience, groupsClaim },
    throttling: { rateLimit: integer('throttleRateLimit') ?? 50, burstLimit: integer('throttleBurstLimit') ?? 100 },
    maxFileBytes: integer('maxFileBytes', MAX_DEPLOYABLE_FILE_BYTES) ?? DEFAULT_MAX_FILE_BYTES,
    // A presigned URL lasts no longer than the role credentials that signed it (shared/config.ts).
    fileUrlTtlSeconds: integer('fileUrlTtlSeconds', MAX_FILE_URL_TTL_SECONDS) ?? DEFAULT_FILE_URL_TTL_SECONDS,
    maxUploadBytes: integer('maxUploadBytes', S3_MAX_OBJECT_BYTES) ?? DEFAULT_MAX_UPLOAD_BYTES,
    uploadSessionTtlSeconds: integer('uploadSessionTtlSeconds', 7 * 24 * 3600) ?? DEFAULT_UPLOAD_SESSION_TTL_SECONDS,
    previewMaxBytes: integer('previewMaxBytes', DEFAULT_PREVIEW_MAX_BYTES) ?? DEFAULT_PREVIEW_MAX_BYTES,
    architecture: architectureOf(text('architecture')),
    offlineBundling: text('offlineBundling') === 'true',
    largeGroupSides: integer('largeGroupSides') ?? DEFAULT_LARGE_GROUP_SIDES,
    scanning: oneOf('scanning', ['on', 'off'], 'on') === 'on',
    scanUnscannable: oneOf('scanUnscannable', ['hold', 'serve'], 'hold'),
    // The scan timer's one SQS delay (docs/decisions.md, "The scan timeout").
    scanTimeoutSeconds: integer('scanTimeoutSeconds', MAX_SCAN_TIMEOUT_SECONDS) ?? DEFAULT_SCAN_TIMEOUT_SECONDS,
  };
}
