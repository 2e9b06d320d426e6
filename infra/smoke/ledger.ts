/**
 * What a run made, written down the moment an answer names it, so the
 * cleanup can remove it whatever failed after. Every name the run gives
 * (contact ids, filenames) starts with the run's marker, so that what a lost
 * answer made can still be found in the user's lists.
 */
export interface MadeAttachment {
  id: string;
  /** The latest minted before deletion (a fresh one cannot have expired): once the cleanup is done it must stop returning the bytes. */
  fileUrl: string;
  /** Whether the cleanup deletes it itself or leaves it to its conversation's deletion (the stream cascade). */
  removedBy: 'delete' | 'conversation';
}

export class Ledger {
  readonly conversations = new Set<string>();
  readonly attachments = new Map<string, MadeAttachment>();
  /** Upload sessions not completed: the cleanup aborts them. */
  readonly pendingSessions = new Set<string>();

  conversation(id: string): void {
    this.conversations.add(id);
  }

  attachment(made: MadeAttachment): void {
    // A later sighting (the cleanup's sweep) brings a fresher file_url, but does not change who removes it.
    const known = this.attachments.get(made.id);
    this.attachments.set(made.id, known ? { ...known, fileUrl: made.fileUrl } : made);
  }

  session(id: string): void {
    this.pendingSessions.add(id);
  }

  sessionCompleted(id: string): void {
    this.pendingSessions.delete(id);
  }
}
