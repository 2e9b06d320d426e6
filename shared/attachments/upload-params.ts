import { normalizeFilename } from '../files/filename.js';
import { parameterInvalid, parameterMissing, referenceMissing } from '../http/errors.js';
import { clientId, type ParamParser, readParams, wellFormed } from '../http/params.js';
import { isConversationId } from '../ids.js';
import { fileTypeOf } from './file-type.js';
import type { Upload } from './model.js';
import type { MultipartForm, MultipartLimits } from './multipart.js';

// Apart from the other endpoints' parameters: only the upload function needs
// the extension table (mime-db, 150 KB of bundle) that fileTypeOf reads.

/** Anything that is not the id of one of the user's conversations is refused alike. */
export const conversationReference: ParamParser<string> = (value, name) => {
  if (typeof value === 'string' && isConversationId(value)) return value;
  throw referenceMissing(name, `No such conversation: ${String(value)}`);
};

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
  const name = normalizeFilename(wellFormed(part.filename ?? '', 'filename'));
  return { file: { filename: name, fileType: fileTypeOf(part.contentType, name), bytes: part.bytes }, ...references };
}
