/**
 * Whether a multipart body's file part really says `text/plain`. busboy
 * reports text/plain for three different parts: one that says so, one with
 * no Content-Type, and one whose Content-Type it cannot parse (`;;;`). Only
 * the first is the client's word; for the other two docs/api.md lets the
 * extension decide. busboy does not hand out a part's raw headers, so this
 * reads the header blocks of the (already parsed) body itself, without
 * copying the file bytes: a slice per header block.
 */
const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');
const TEXT_PLAIN = /^text\/plain[ \t]*(;|$)/i;
const FILENAME_PARAM = /;\s*filename\*?\s*=/i;

export function fileDeclaresTextPlain(body: Buffer, contentType: string): boolean {
  const boundary = /;\s*boundary=(?:"([^"]*)"|([^;\s]+))/i.exec(contentType);
  if (!boundary) return false;
  return fileHeaderBlocks(body, boundary[1] ?? boundary[2] ?? '').some((headers) => {
    const declared = headerValue(headers, 'content-type');
    return declared !== undefined && TEXT_PLAIN.test(declared);
  });
}

/** The header lines of every part whose Content-Disposition names a filename. */
function fileHeaderBlocks(body: Buffer, boundary: string): string[][] {
  const delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
  // The first delimiter may open the body without its CRLF (RFC 2046: the CRLF belongs to the delimiter).
  const opensBody = body.subarray(0, delimiter.length - 2).equals(delimiter.subarray(2));
  let at = opensBody ? delimiter.length - 2 : body.indexOf(delimiter);
  if (!opensBody && at >= 0) at += delimiter.length;
  const blocks: string[][] = [];
  while (at >= 0 && at < body.length && body.toString('latin1', at, at + 2) !== '--') {
    const headerStart = body.indexOf(CRLF, at);
    if (headerStart < 0) break;
    const headerEnd = body.indexOf(HEADER_END, headerStart);
    if (headerEnd < 0) break;
    // busboy reads header bytes as latin1 too.
    const lines = body.toString('latin1', headerStart + 2, headerEnd).split('\r\n');
    const disposition = headerValue(lines, 'content-disposition');
    if (disposition !== undefined && FILENAME_PARAM.test(disposition)) blocks.push(lines);
    const next = body.indexOf(delimiter, headerEnd + HEADER_END.length);
    at = next < 0 ? -1 : next + delimiter.length;
  }
  return blocks;
}

function headerValue(lines: string[], name: string): string | undefined {
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === name) return line.slice(colon + 1).trim();
  }
  return undefined;
}
