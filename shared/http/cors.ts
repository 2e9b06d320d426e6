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

/** Headers of the answer to a preflight OPTIONS on a resource that has these methods. */
export function preflightHeaders(
  origin: string | undefined,
  allowedOrigins: readonly string[],
  methods: readonly string[],
): Record<string, string> {
  const headers = corsHeaders(origin, allowedOrigins);
  if (!headers['access-control-allow-origin']) return headers;
  return {
    ...headers,
    'access-control-allow-methods': [...methods, 'OPTIONS'].join(', '),
    'access-control-allow-headers': CORS_ALLOWED_HEADERS.join(', '),
    'access-control-max-age': String(CORS_MAX_AGE_SECONDS),
  };
}

/**
 * The files bucket's CORS rule: a page on an allowed origin may download a
 * file through its presigned file_url (GET, HEAD) and read its headers.
 */
export function filesBucketCors(allowedOrigins: readonly string[]) {
  return {
    allowedMethods: ['GET', 'HEAD'] as const,
    allowedOrigins: [...allowedOrigins],
    exposedHeaders: ['Content-Disposition', 'Content-Type', 'Content-Length', 'ETag'],
    maxAgeSeconds: 3600,
  };
}
