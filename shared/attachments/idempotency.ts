import { createHash } from 'node:crypto';
import type { Caller } from '../caller.js';
import type { ReplayOptions } from '../http/idempotency.js';
import type { ApiResponse } from '../http/response.js';
import type { Attachment, Upload } from './model.js';
import type { AttachmentService } from './service.js';

/**
 * What an upload asks for, as Idempotency-Key compares requests: its fields,
 * the file's name, type and bytes (by hash). Not the raw body, whose
 * multipart boundary differs from one client build to the next.
 */
export function uploadMeaning(upload: Upload) {
  return {
    conversation_id: upload.conversation_id,
    message_id: upload.message_id,
    filename: upload.file.filename,
    file_type: upload.file.fileType,
    file_sha256: createHash('sha256').update(upload.file.bytes).digest('hex'),
  };
}

/**
 * For the routes that answer an attachment (upload, complete): file_url (and
 * its expiry) is never stored, in the idempotency record neither: a replay
 * shows the attachment as it is now, with a link minted anew.
 */
export function attachmentReplay(caller: Caller, attachments: Pick<AttachmentService, 'replayed'>): ReplayOptions {
  const created = (response: ApiResponse) => response.status === 201;
  return {
    keep: (response) => {
      if (!created(response)) return response;
      const { file_url: _link, file_url_expires_at: _expiry, ...record } = response.body as Attachment;
      return { ...response, body: record };
    },
    refresh: async (stored) =>
      created(stored) ? { ...stored, body: await attachments.replayed(caller, (stored.body as Attachment).id) } : stored,
  };
}
