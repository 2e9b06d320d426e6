import { fileTypeOf, isMediaType } from '../attachments/file-type.js';
import { conversationReference } from '../attachments/upload-params.js';
import { normalizeFilename } from '../files/filename.js';
import { fileTooLarge, parameterInvalid, parameterMissing } from '../http/errors.js';
import { clientId, integerBetween, type ParamParser, text } from '../http/params.js';
import type { SessionRequest } from './model.js';

// Apart from params.ts: only the start function needs the extension table (mime-db) that fileTypeOf reads.

const filename: ParamParser<string> = (value, name, kind) => {
  const raw = text(value, name, kind);
  if (raw === '') throw parameterInvalid(name, `${name} must not be empty`);
  return normalizeFilename(raw);
};

const mediaType: ParamParser<string> = (value, name, kind) => {
  const raw = text(value, name, kind);
  if (!isMediaType(raw)) throw parameterInvalid(name, `${name} must be a MIME type such as video/mp4`);
  return raw;
};

/** 1 byte to the limit; over it is 413 like an upload over its limit, anything else 400. */
const fileSize =
  (maxBytes: number): ParamParser<number> =>
  (value, name, kind) => {
    const size = integerBetween(1, Number.MAX_SAFE_INTEGER)(value, name, kind);
    if (size > maxBytes) throw fileTooLarge(maxBytes, name);
    return size;
  };

export const startParams = (maxUploadBytes: number) => ({
  filename,
  file_size: fileSize(maxUploadBytes),
  file_type: mediaType,
  conversation_id: conversationReference,
  message_id: clientId,
});

export function sessionRequestOf(values: {
  filename?: string;
  file_size?: number;
  file_type?: string;
  conversation_id?: string;
  message_id?: string;
}): SessionRequest {
  if (values.filename === undefined) throw parameterMissing('filename');
  if (values.file_size === undefined) throw parameterMissing('file_size');
  const { conversation_id, message_id } = values;
  return {
    filename: values.filename,
    file_size: values.file_size,
    // As for uploads (docs/api.md): a specific declared type, else the extension's, else application/octet-stream.
    file_type: fileTypeOf(values.file_type, values.filename),
    ...(conversation_id === undefined ? {} : { conversation_id }),
    ...(message_id === undefined ? {} : { message_id }),
  };
}
