/**
 * CORS for browser clients, computed in one place for the handlers, the local
 * gateway emulator and the CDK stack. Clients authenticate with a bearer
 * token, never cookies, so credentials are not allowed.
 */
export const CORS_ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'Idempotency-Key'] as const;
export const CORS_EXPOSED_HEADERS = ['x-request-id', 'Idempotent-Replayed'] as const;
/** How long a browser may cache a preflight answer. */
export const CORS_MAX_AGE_SECONDS = 600;

/** The Access-Control-Allow-Origin value for this request's Origin header, if any. */
export function allowedOrigin(origin: string | undefined, allowedOrigins: readonly string[]): string | undefined {
  if (!origin) return undefined;
  // As API Gateway's own CORS support answers it: no credentials, so the wildcard itself is enough.
  if (allowedOrigins.includes('*')) return '*';
  return allowedOrigins.includes(origin) ? origin : undefined;
}

/** Headers of every actual response (success and error alike). */
export function corsHeaders(origin: string | undefined, allowedOrigins: readonly string[]): Record<string, string> {
  const allowed = allowedOrigin(origin, allowedOrigins);
  // The answer depends on Origin, so caches must not reuse it for another origin.
  if (!allowed) return { vary: 'Origin' };
  return {
    vary: 'Origin',
    'access-control-allow-origin': allowed,
    'access-control-expose-headers': CORS_EXPOSED_HEADERS.join(', '),
  };
}

/**
 * Headers of the answer to a preflight OPTIONS on a resource that has these
 * methods (a mock integration in the stack): the methods and headers are
 * fixed, the origin is allowed only when configured.
 */
export function preflightHeaders(
  origin: string | undefined,
  allowedOrigins: readonly string[],
  methods: readonly string[],
): Record<string, string> {
  const allowed = allowedOrigin(origin, allowedOrigins);
  return {
    vary: 'Origin',
    'access-control-allow-methods': [...methods, 'OPTIONS'].join(', '),
    'access-control-allow-headers': CORS_ALLOWED_HEADERS.join(', '),
    'access-control-max-age': String(CORS_MAX_AGE_SECONDS),
    ...(allowed ? { 'access-control-allow-origin': allowed } : {}),
  };
}

/** What API Gateway's own answers can say about the origin, and why: docs/client-developers.md, "CORS". */
export type GatewayAllowOrigin = { kind: 'none' } | { kind: 'fixed'; origin: string } | { kind: 'request-origin' };

export function gatewayAllowOrigin(allowedOrigins: readonly string[]): GatewayAllowOrigin {
  if (allowedOrigins.length === 0) return { kind: 'none' };
  if (allowedOrigins.includes('*')) return { kind: 'fixed', origin: '*' };
  const [only] = allowedOrigins;
  if (allowedOrigins.length === 1 && only !== undefined) return { kind: 'fixed', origin: only };
  return { kind: 'request-origin' };
}

/** The CORS headers of a gateway response to a request from this origin. */
export function gatewayResponseCorsHeaders(origin: string | undefined, allowedOrigins: readonly string[]): Record<string, string> {
  const rule = gatewayAllowOrigin(allowedOrigins);
  if (rule.kind === 'none') return { vary: 'Origin' };
  const allowOrigin = rule.kind === 'fixed' ? rule.origin : origin;
  return {
    vary: 'Origin',
    'access-control-expose-headers': CORS_EXPOSED_HEADERS.join(', '),
    ...(allowOrigin ? { 'access-control-allow-origin': allowOrigin } : {}),
  };
}

/**
 * The files bucket's CORS rule: a page on an allowed origin may download a
 * file through its presigned file_url (GET, HEAD) and read its headers, and
 * PUT the parts of an upload session to their presigned URLs, reading each
 * part's ETag (completion names the parts by it).
 */
export function filesBucketCors(allowedOrigins: readonly string[]) {
  return {
    allowedMethods: ['GET', 'HEAD', 'PUT'] as const,
    allowedOrigins: [...allowedOrigins],
    // A part PUT may carry a Content-Type (Uppy sets one); the signature is in the URL.
    allowedHeaders: ['Content-Type'] as const,
    exposedHeaders: ['Content-Disposition', 'Content-Type', 'Content-Length', 'ETag'],
    maxAgeSeconds: 3600,
  };
}
