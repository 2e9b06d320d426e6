import { fileKey } from '../files/keys.js';
import type { MultipartFileStore } from '../files/model.js';

/** What a removed session record names: enough to find what it may have left in S3. */
export interface RemovedSession {
  userId: string;
  sessionId: string;
  attachmentId: string;
  uploadId: string;
}

export type LeftoverOutcome = 'kept_for_attachment' | 'removed';

/**
 * What an upload session leaves when its record is gone (TTL expiry, abort)
 * and no attachment holds it: its multipart upload (parts) and an object that
 * S3 assembled for a completion that never committed (an answer lost, a
 * client that walked away, a removal that failed). Both are removed, unless
 * the attachment the session was minted for exists: then the session was
 * completed and the object is that attachment's file.
 *
 * Safe against a completion in flight: the completing transaction requires
 * the session record (pending), so once the record is gone no attachment can
 * appear for it; a completion that assembles after this ran fails its
 * transaction and removes the object itself. Idempotent: aborting an upload
 * that is gone and deleting a missing object are not errors.
 */
export class SessionLeftovers {
  constructor(
    private readonly attachments: { get(id: string): Promise<unknown> },
    private readonly files: Pick<MultipartFileStore, 'abortMultipart' | 'remove'>,
  ) {}

  async removeUnlessAttached(session: RemovedSession): Promise<LeftoverOutcome> {
    if (await this.attachments.get(session.attachmentId)) return 'kept_for_attachment';
    const key = fileKey(session.userId, session.attachmentId, session.sessionId);
    await this.files.abortMultipart(key, session.uploadId);
    await this.files.remove(key);
    return 'removed';
  }
}
