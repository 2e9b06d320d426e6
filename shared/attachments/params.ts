import { parameterInvalid, parameterMissing, referenceMissing } from '../http/errors.js';
import { clientId, readParams, text, type Reader } from '../http/params.js';
import { isAttachmentId, isConversationId } from '../ids.js';
import { cursor, limit } from '../pagination.js';
import { fileTypeOf } from './file-type.js';
import { normalizeFilename } from './filename.js';
import type { Upload } from './model.js';
import type { MultipartForm, MultipartLimits } from './multipart.js';

/** The parameters each attachment endpoint accepts, and how each is read. */
export const listParams = {
  limit,
  starting_after: cursor(isAttachmentId),
  ending_before: cursor(isAttachmentId),
  // A filter, not a reference: one that matches nothing is an empty list.
  conversation_id: clientId,
};

/** Anything that is not the id of one of the user's conversations is refused alike. */
const conversationReference: Reader<string> = (value, name) => {
  if (typeof value === 'string' && isConversationId(value)) return value;
  throw referenceMissing(name, `No such conversation: ${String(value)}`);
};

const filename: Reader<string> = (value, name, kind) => {
  const raw = text(value, name, kind);
  if (raw === '') throw parameterInvalid(name, `${name} must not be empty`);
  return normalizeFilename(raw);
};

export const renameParams = { filename };

export function renameOf(values: { filename?: string }): string {
  if (values.filename === undefined) throw parameterMissing('filename');
  return values.filename;
}

const UPLOAD_FILE = 'file';
const uploadFields = { conversation_id: conversationReference, message_id: clientId };

export const uploadLimits = (maxFileBytes: number): MultipartLimits => ({
  maxFileBytes,
  // One file: a second is refused, not silently dropped.
  maxFiles: 1,
  maxFields: 10,
  maxFieldBytes: 1024,
});

/** The upload a multipart form describes: exactly one non-empty `file` part and the optional references. */
export function uploadOf(form: MultipartForm): Upload {
  if (Object.hasOwn(form.fields, UPLOAD_FILE)) {
    throw parameterInvalid(UPLOAD_FILE, 'file must be a file part (with a filename), not a text field');
  }
  const references = readParams({ kind: 'form', values: form.fields }, uploadFields);
  const stray = form.files.find((part) => part.field !== UPLOAD_FILE);
  if (stray) throw parameterInvalid(stray.field, `Files are accepted only in the part named "${UPLOAD_FILE}"`);
  const [part] = form.files;
  if (!part) throw parameterMissing(UPLOAD_FILE, 'file is required: a multipart part named "file" with a filename');
  if (part.bytes.length === 0) throw parameterInvalid(UPLOAD_FILE, 'file must not be empty');
  const name = normalizeFilename(part.filename ?? '');
  return { file: { filename: name, fileType: fileTypeOf(part.contentType, name), bytes: part.bytes }, ...references };
}
