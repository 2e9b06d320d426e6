import busboy from 'busboy';
import { dictionary } from '../http/dictionary.js';
import { type ApiError, bodyInvalid, fileTooLarge, parameterInvalid, unsupportedMediaType } from '../http/errors.js';
import { type ApiRequest, mediaTypeOf, rawBody } from '../http/request.js';
import { fileDeclaresTextPlain } from './declared-type.js';

/**
 * The project's one multipart/form-data parser, over busboy 1.6 (maintained,
 * no known advisories). It reads the whole body that API Gateway handed over,
 * enforces limits, and always settles: every malformed body becomes a 4xx,
 * never an uncaught exception or a promise that never resolves.
 */
export interface FilePart {
  field: string;
  /** As the client sent it (`filename*` preferred, decoded as UTF-8); undefined when absent. */
  filename: string | undefined;
  /**
   * The part's Content-Type (type/subtype, lower case); undefined when the
   * part has none or one that cannot be parsed: the extension then decides.
   */
  contentType: string | undefined;
  bytes: Buffer;
}

export interface MultipartForm {
  /** Text fields; a name sent twice is refused. */
  fields: Record<string, string>;
  files: FilePart[];
}

export interface MultipartLimits {
  maxFileBytes: number;
  maxFiles: number;
  maxFields: number;
  maxFieldBytes: number;
}

const MEDIA_TYPE = 'multipart/form-data';
/** What busboy reports for a part with no Content-Type or one it cannot parse, as well as for text/plain. */
const BUSBOY_DEFAULT_TYPE = 'text/plain';

export function readMultipart(request: ApiRequest, limits: MultipartLimits): Promise<MultipartForm> {
  const mediaType = mediaTypeOf(request);
  if (mediaType !== MEDIA_TYPE) throw unsupportedMediaType(mediaType, [MEDIA_TYPE]);
  // Base64 when API Gateway treats the type as binary (as our stack sets it up);
  // otherwise it passed the body on as UTF-8 text, which rawBody() reverses.
  return parseMultipart(rawBody(request), request.headers['content-type'] ?? '', limits);
}

export function parseMultipart(body: Buffer, contentType: string, limits: MultipartLimits): Promise<MultipartForm> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: { 'content-type': contentType },
        defParamCharset: 'utf8',
        limits: {
          // One byte more than allowed, so that "over" is told apart from "exactly at".
          fileSize: limits.maxFileBytes + 1,
          files: limits.maxFiles,
          fields: limits.maxFields,
          // busboy reports the field size and part count limits when they are reached, not passed
          // (a value of exactly maxFieldBytes came out truncated): one more, as for fileSize.
          fieldSize: limits.maxFieldBytes + 1,
          parts: limits.maxFiles + limits.maxFields + 1,
        },
      });
    } catch {
      reject(bodyInvalid('Content-Type multipart/form-data needs a boundary parameter'));
      return;
    }

    const form: MultipartForm = { fields: dictionary(), files: [] };
    let failure: ApiError | undefined;
    let settled = false;
    // The first problem found is the one reported; parsing runs to its end regardless.
    const fail = (error: ApiError) => {
      failure ??= error;
    };
    const settle = (error?: ApiError) => {
      if (settled) return;
      settled = true;
      const reason = failure ?? error;
      if (reason) return reject(reason);
      for (const file of form.files) {
        if (file.contentType === BUSBOY_DEFAULT_TYPE && !fileDeclaresTextPlain(body, contentType)) file.contentType = undefined;
      }
      resolve(form);
    };

    parser.on('file', (field, stream, info) => {
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= limits.maxFileBytes) chunks.push(chunk);
      });
      stream.on('limit', () => fail(fileTooLarge(limits.maxFileBytes)));
      stream.on('error', () => fail(bodyInvalid('The multipart body ends inside a file')));
      stream.on('end', () => {
        // Given the whole body, busboy hands a file over as one view of it: kept as is, not copied
        // (a copy is one more file size of memory at the handler's peak).
        const bytes = chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks);
        form.files.push({ field, filename: unescapeFormFilename(info.filename), contentType: info.mimeType.toLowerCase(), bytes });
      });
    });
    parser.on('field', (name, value, info) => {
      if (info.nameTruncated || info.valueTruncated) {
        fail(parameterInvalid(name, `${name} must be at most ${limits.maxFieldBytes} bytes`));
      } else if (Object.hasOwn(form.fields, name)) {
        fail(parameterInvalid(name, `${name} was given more than once`));
      } else {
        form.fields[name] = value;
      }
    });
    parser.on('filesLimit', () =>
      fail(parameterInvalid('file', `At most ${limits.maxFiles} file part${limits.maxFiles === 1 ? ' is' : 's are'} accepted`)),
    );
    parser.on('fieldsLimit', () => fail(bodyInvalid(`At most ${limits.maxFields} text fields are accepted`)));
    parser.on('partsLimit', () => fail(bodyInvalid('The multipart body has too many parts')));
    parser.on('error', (error: Error) => settle(bodyInvalid(`The multipart body is malformed: ${describe(error)}`)));
    parser.on('close', () => settle());
    parser.end(body);
  });
}

/**
 * Browsers, undici's FormData and curl follow the HTML standard, which sends a
 * `"` in a filename as %22 and CR, LF as %0D, %0A; these three are undone.
 */
function unescapeFormFilename(filename: string | undefined): string | undefined {
  return filename?.replace(/%(22|0D|0A)/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/** busboy's own messages ("Unexpected end of form", "Malformed part header") are safe and useful to show. */
const describe = (error: Error): string => error.message.replace(/\.$/, '').toLowerCase();
