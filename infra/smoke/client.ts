/**
 * The stage as a client sees it: HTTP to the API's base URL, a bearer token
 * per call, answers read whole. No retries: a smoke that retried would hide
 * the failures it is there to show.
 */
/** JSON a check reads by key: each check asserts the shape it relies on (expect), the compiler cannot know it. */
// biome-ignore lint/suspicious/noExplicitAny: parsed JSON from the stage, read by key after the check's own assertions
export type Json = any;

export interface Answer {
  status: number;
  headers: Headers;
  /** The body parsed as JSON, undefined when it is not JSON. */
  body: Json;
  text: string;
}

export interface CallInit {
  form?: Record<string, string>;
  json?: unknown;
  body?: RequestInit['body'];
  headers?: Record<string, string>;
}

/** How long one call may take before it counts as a failure (a hung stage is a broken one). */
const CALL_TIMEOUT_MS = 60_000;

export class StageClient {
  /** `base` is the stage's root (`https://<id>.execute-api.<region>.amazonaws.com/prod`), without `/v1`. */
  constructor(readonly base: string) {}

  /** A call as the holder of `token` (no Authorization header when null); `path` starts with `/v1`. */
  async call(token: string | null, method: string, path: string, init: CallInit = {}): Promise<Answer> {
    return read(await fetch(`${this.base}${path}`, { method, ...encode(token, init), signal: AbortSignal.timeout(CALL_TIMEOUT_MS) }));
  }
}

/** The headers and body of a call: the bearer token, and a form or JSON encoded with its content type. */
export function encode(token: string | null, init: CallInit): { headers: Record<string, string>; body: RequestInit['body'] } {
  const headers: Record<string, string> = { ...init.headers };
  if (token !== null) headers.authorization ??= `Bearer ${token}`;
  let body = init.body;
  if (init.form) {
    body = new URLSearchParams(init.form).toString();
    headers['content-type'] ??= 'application/x-www-form-urlencoded';
  } else if (init.json !== undefined) {
    body = JSON.stringify(init.json);
    headers['content-type'] ??= 'application/json';
  }
  return { headers, body };
}

export async function read(response: Response): Promise<Answer> {
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, body, text };
}

/**
 * The stage's root from what a user may paste: the `ApiUrl` output
 * (`…/prod/v1`), the stage URL (`…/prod`), or the local server's URL.
 */
export function stageBase(url: string): string {
  const parsed = new URL(url);
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw new Error(`--url must be an http(s) URL, not ${url}`);
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, '').replace(/\/v1$/, '')}`;
}

/** One line that says what came back: status, error code and message, request id. */
export function describe(answer: Answer): string {
  const error = answer.body?.error;
  if (error && typeof error === 'object') {
    return `${answer.status} ${error.code ?? error.type ?? ''}: ${error.message ?? ''} (request ${error.request_id ?? answer.headers.get('x-amzn-requestid') ?? '?'})`;
  }
  return `${answer.status} ${answer.text.slice(0, 200)}`;
}
