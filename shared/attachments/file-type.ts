import { typeOfSuffix } from './extension-types.js';

export const GENERIC_FILE_TYPE = 'application/octet-stream';

// Top-level types of the IANA media type registry.
const TOP_LEVEL = new Set([
  'application',
  'audio',
  'font',
  'example',
  'haptics',
  'image',
  'message',
  'model',
  'multipart',
  'text',
  'video',
]);
// An HTTP token, less `*`: a wildcard like image/* names no type.
const SUBTYPE = /^[!#$%&'+.^_`|~0-9a-z-]+$/;
// Types that say "some bytes" rather than what the file is.
const UNSPECIFIC = new Set(['application/octet-stream', 'application/unknown', 'application/x-unknown', 'binary/octet-stream']);

/**
 * The file's `type/subtype` in lower case: the part's own content type when
 * it names a specific valid type, else what the extension says (the mime
 * package's table of every mime-db type that has an extension, in a compact
 * form generated from it), else application/octet-stream.
 */
export function fileTypeOf(declared: string | undefined, filename: string): string {
  const specific = specificType(declared);
  if (specific) return specific;
  const dot = filename.lastIndexOf('.');
  // No extension is no clue (mime's getType() would read a name like "json" as one).
  const fromExtension = dot > 0 ? typeOfSuffix(filename.slice(dot)) : undefined;
  return fromExtension ? fromExtension.toLowerCase() : GENERIC_FILE_TYPE;
}

/** Whether the text is a valid `type/subtype` (parameters allowed), specific or not. */
export function isMediaType(declared: string): boolean {
  return specificType(declared) !== undefined || UNSPECIFIC.has((declared.split(';')[0] ?? '').trim().toLowerCase());
}

function specificType(declared: string | undefined): string | undefined {
  if (!declared) return undefined;
  const essence = (declared.split(';')[0] ?? '').trim().toLowerCase();
  const [type, subtype, ...rest] = essence.split('/');
  if (rest.length > 0 || !type || !subtype || !TOP_LEVEL.has(type) || !SUBTYPE.test(subtype)) return undefined;
  return UNSPECIFIC.has(essence) ? undefined : essence;
}
