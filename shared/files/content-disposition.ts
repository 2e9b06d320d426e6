import { asciiFallback } from './filename.js';

/**
 * The Content-Disposition of a download, always in the form docs/api.md gives:
 * `attachment; filename="<ASCII fallback>"; filename*=UTF-8''<percent-encoded>`
 * (RFC 6266 / 8187). The content-disposition package leaves out the quotes
 * and `filename*` for ASCII names; clients of the contract may expect both.
 */
export function attachmentDisposition(filename: string): string {
  // asciiFallback has already replaced `"` and `\`, so the quoted string needs no escapes.
  return `attachment; filename="${asciiFallback(filename)}"; filename*=UTF-8''${percentEncode(filename)}`;
}

/** RFC 8187 attr-chars stay; encodeURIComponent also leaves ' ( ) * which must be escaped. */
const percentEncode = (value: string): string =>
  encodeURIComponent(value).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
