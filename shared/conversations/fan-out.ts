import { threadKey, threadOf, type Counterpart } from '../dynamo/keys.js';
import { logger } from '../observability.js';

/** An upload into a thread, as the attachments table's stream shows it. */
export interface SharedUpload {
  attachmentId: string;
  uploadedBy: string;
  /** Whom the uploader's side is with: the contact of a direct thread, or the group. */
  counterpart: Counterpart;
  createdAt: number;
}

/** What the fan-out writes through (DynamoConversationStore). */
export interface ThreadDelivery {
  receive(userId: string, counterpart: Counterpart, at: number, createdId: string): Promise<'touched' | 'created'>;
  touch(userId: string, conversationId: string, at: number): Promise<boolean>;
  sidesOf(threadKey: string): AsyncIterable<{ userId: string; conversationId: string }[]>;
}

/** Sides of a group written at once: enough to reach 1,000 sides in seconds, few enough not to throttle one partition. */
const GROUP_WRITES_IN_FLIGHT = 16;

/**
 * Moves an upload to the other sides of its thread (docs/api.md, "Sharing"):
 * each gets last_active_at forward to the upload's time, in one conditional
 * write that never moves it back, so a record delivered twice, or retried
 * after a lost answer, changes nothing the second time. A direct thread's
 * contact gets their side created with it when they hold none; a group
 * member without a side gets none (they have no place to keep one's state).
 */
export class FanOut {
  constructor(private readonly sides: ThreadDelivery) {}

  /** How many sides it reached. */
  async deliver(upload: SharedUpload): Promise<number> {
    const { counterpart, uploadedBy, createdAt } = upload;
    if (counterpart.kind === 'contact') {
      // A thread of one (a conversation with oneself) has no other side.
      if (counterpart.id === uploadedBy) return 0;
      // The same id for every delivery of this upload, so a repeat can never make a second side.
      const createdId = `conv_${upload.attachmentId.slice('att_'.length)}`;
      const outcome = await this.sides.receive(counterpart.id, { kind: 'contact', id: uploadedBy }, createdAt, createdId);
      if (outcome === 'created') logger.info('side created by an upload', { conversation_id: createdId, attachment_id: upload.attachmentId });
      return 1;
    }
    let reached = 0;
    for await (const page of this.sides.sidesOf(threadKey({ kind: 'group', groupId: counterpart.id }))) {
      const others = page.filter((side) => side.userId !== uploadedBy);
      for (let start = 0; start < others.length; start += GROUP_WRITES_IN_FLIGHT) {
        const touched = await Promise.all(
          others.slice(start, start + GROUP_WRITES_IN_FLIGHT).map((side) => this.sides.touch(side.userId, side.conversationId, createdAt)),
        );
        reached += touched.filter(Boolean).length;
      }
    }
    return reached;
  }
}

/**
 * Of a batch's uploads, each uploader's latest into each thread: one
 * uploader's uploads into a thread go to the same sides, and every write
 * moves a side's time forward only, so the latest one's delivery leaves what
 * all of them would (100 uploads into a group of 1,000 in one batch are 1,000
 * writes, not 100,000).
 */
export function latestOfEachSender(uploads: SharedUpload[]): SharedUpload[] {
  const latest = new Map<string, SharedUpload>();
  for (const upload of uploads) {
    const sender = JSON.stringify([upload.uploadedBy, threadKey(threadOf(upload.uploadedBy, upload.counterpart))]);
    const before = latest.get(sender);
    if (!before || upload.createdAt > before.createdAt) latest.set(sender, upload);
  }
  return [...latest.values()];
}
