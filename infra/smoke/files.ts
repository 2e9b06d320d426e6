import { createHash, randomBytes } from 'node:crypto';

/**
 * A file of `size` bytes that no two runs share. It opens with a line of text
 * so that the completion's type sniffing finds no format in random bytes and
 * keeps the declared type.
 */
export function testFile(marker: string, size: number): Buffer {
  const head = Buffer.from(`${marker} smoke test file\n`);
  return Buffer.concat([head, randomBytes(size - head.length)]);
}

export const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** Follows a presigned URL (file_url) as any HTTP client would. */
export async function download(url: string): Promise<{ status: number; bytes: Buffer; text: string }> {
  const response = await fetch(url, { signal: AbortSignal.timeout(120_000) });
  const bytes = Buffer.from(await response.arrayBuffer());
  return { status: response.status, bytes, text: response.ok ? '' : bytes.toString('utf8', 0, 300) };
}

/** Whether a download gave exactly these bytes; else why not. */
export async function sameBytes(url: string, expected: Buffer): Promise<string | undefined> {
  const file = await download(url);
  if (file.status !== 200) return `file_url answered ${file.status}: ${file.text}`;
  if (file.bytes.length !== expected.length) return `file_url gave ${file.bytes.length} bytes, ${expected.length} were uploaded`;
  if (sha256(file.bytes) !== sha256(expected))
    return `file_url gave other bytes (sha256 ${sha256(file.bytes).slice(0, 12)}…, uploaded ${sha256(expected).slice(0, 12)}…)`;
  return undefined;
}
