import { randomBytes } from 'node:crypto';

/** A multipart/form-data body with one file part (named `file`, as uploads require) and text fields. */
export function multipartBody(file: { filename: string; type: string; bytes: Buffer }, fields: Record<string, string> = {}) {
  const boundary = `----bench${randomBytes(12).toString('hex')}`;
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  parts.push(
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.filename}"\r\nContent-Type: ${file.type}\r\n\r\n`,
    ),
    file.bytes,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  );
  return { contentType: `multipart/form-data; boundary=${boundary}`, body: Buffer.concat(parts) };
}

/** Bytes that do not compress or repeat, as photos and documents mostly are. */
export const fileOf = (bytes: number) => ({ filename: 'photo.jpg', type: 'image/jpeg', bytes: randomBytes(bytes) });
