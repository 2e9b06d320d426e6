/**
 * Where an HTTP/1.1 message ends in a byte stream (RFC 9112 §6.3), so that a
 * proxy can act on one request of a persistent connection without
 * understanding anything else about it.
 */
export interface Head {
  /** Bytes up to and including the blank line. */
  length: number;
  startLine: string;
  /** Lower-cased names; a repeated header keeps its last value. */
  headers: Record<string, string>;
}

const CRLF = Buffer.from('\r\n');
const BLANK_LINE = Buffer.from('\r\n\r\n');

export function parseHead(bytes: Buffer): Head | undefined {
  const end = bytes.indexOf(BLANK_LINE);
  if (end < 0) return undefined;
  const [startLine = '', ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { length: end + BLANK_LINE.length, startLine, headers };
}

/**
 * The length of the whole message (head and body) at the start of `bytes`,
 * or undefined while it is incomplete. `closed`: the sender has closed its
 * side, which ends a response framed by the connection's end.
 */
export function messageLength(
  bytes: Buffer,
  message: { kind: 'request' } | { kind: 'response'; requestMethod: string; closed: boolean },
): number | undefined {
  const head = parseHead(bytes);
  if (!head) return undefined;
  const transferEncoding = head.headers['transfer-encoding'];
  if (transferEncoding !== undefined && /(^|,)\s*chunked\s*$/i.test(transferEncoding)) {
    const bodyLength = chunkedLength(bytes, head.length);
    return bodyLength === undefined ? undefined : head.length + bodyLength;
  }
  if (message.kind === 'response') {
    const status = Number(head.startLine.split(' ')[1]);
    const bodiless = message.requestMethod === 'HEAD' || (status >= 100 && status < 200) || status === 204 || status === 304;
    if (bodiless) return head.length;
  }
  const contentLength = head.headers['content-length'];
  if (contentLength !== undefined) {
    const total = head.length + Number(contentLength);
    return bytes.length >= total ? total : undefined;
  }
  // A request without framing has no body; a response without it lasts until the connection closes.
  if (message.kind === 'request') return head.length;
  return message.closed ? bytes.length : undefined;
}

/** Bytes of a chunked body starting at `offset`, trailers included, or undefined while incomplete. */
function chunkedLength(bytes: Buffer, offset: number): number | undefined {
  let at = offset;
  for (;;) {
    const lineEnd = bytes.indexOf(CRLF, at);
    if (lineEnd < 0) return undefined;
    const size = parseInt(bytes.subarray(at, lineEnd).toString('latin1').split(';')[0]!.trim(), 16);
    if (!Number.isFinite(size)) throw new Error('malformed chunk size');
    at = lineEnd + CRLF.length;
    if (size === 0) break;
    at += size + CRLF.length;
    if (bytes.length < at) return undefined;
  }
  // Trailer lines, up to an empty one.
  for (;;) {
    const lineEnd = bytes.indexOf(CRLF, at);
    if (lineEnd < 0) return undefined;
    const empty = lineEnd === at;
    at = lineEnd + CRLF.length;
    if (empty) return at - offset;
  }
}

/** The request head without one header (e.g. `expect`, which the proxy answers itself). */
export function withoutHeader(head: Buffer, name: string): Buffer {
  const lines = head.toString('latin1').split('\r\n');
  const kept = lines.filter((line, index) => index === 0 || line === '' || line.slice(0, line.indexOf(':')).trim().toLowerCase() !== name);
  return Buffer.from(kept.join('\r\n'), 'latin1');
}
