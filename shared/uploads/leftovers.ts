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
 * What an upload session leaves in S3 once its record is gone (parts, an assembled object), removed
 * unless its attachment exists; safe against a completion in flight, which needs the record
 * (docs/consistency.md, "An upload session walked away from").
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
