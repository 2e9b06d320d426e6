import { normalizeFilename } from '../files/filename.js';
import { parameterInvalid, parameterMissing } from '../http/errors.js';
import { clientId, type ParamParser, text } from '../http/params.js';
import { isAttachmentId } from '../ids.js';
import { cursor, limit } from '../pagination.js';

/** The parameters each attachment endpoint but the upload accepts (upload-params.ts), and how each is read. */
export const listParams = {
  limit,
  starting_after: cursor(isAttachmentId),
  ending_before: cursor(isAttachmentId),
  // A filter, not a reference: one that matches nothing is an empty list.
  conversation_id: clientId,
};

const filename: ParamParser<string> = (value, name, kind) => {
  const raw = text(value, name, kind);
  if (raw === '') throw parameterInvalid(name, `${name} must not be empty`);
  return normalizeFilename(raw);
};

export const renameParams = { filename };

export function renameOf(values: { filename?: string }): string {
  if (values.filename === undefined) throw parameterMissing('filename');
  return values.filename;
}
