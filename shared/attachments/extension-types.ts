import { brotliDecompressSync } from 'node:zlib';
import { EXTENSION_TABLE } from './extension-table.js';

/**
 * mime's extension table (every mime-db type that has an extension) in a compact
 * form: entries separated by `|`, sorted by type; each is one base-36 digit (how
 * many leading characters it shares with the type before it), the rest of the type,
 * then its extensions, space-separated. shared/attachments/extension-table.ts holds
 * it Brotli-compressed in base64: 10 KB in a bundle where the mime package weighs 39 KB.
 */
export function decodeExtensionTable(table: string): Map<string, string> {
  const typeOf = new Map<string, string>();
  let previous = '';
  for (const entry of table.split('|')) {
    const [rest = '', ...extensions] = entry.slice(1).split(' ');
    const type = previous.slice(0, Number.parseInt(entry[0] ?? '0', 36)) + rest;
    for (const extension of extensions) typeOf.set(extension, type);
    previous = type;
  }
  return typeOf;
}

/** The table as extension-table.ts holds it: the compact form, Brotli-compressed, in base64. */
export function readExtensionTable(base64: string): Map<string, string> {
  return decodeExtensionTable(brotliDecompressSync(Buffer.from(base64, 'base64')).toString());
}

let table: Map<string, string> | undefined;

/**
 * The type mime's getType() gives a name's suffix from its last dot on (`.tar.gz`,
 * `.b/c`): the extension after the last path separator, none when a separator
 * follows the dot and no dot follows it.
 */
export function typeOfSuffix(suffix: string): string | undefined {
  const last = suffix.replace(/^.*[/\\]/s, '').toLowerCase();
  const extension = last.replace(/^.*\./s, '');
  if (last.length < suffix.length && extension.length >= last.length - 1) return undefined;
  table ??= readExtensionTable(EXTENSION_TABLE);
  return table.get(extension);
}
