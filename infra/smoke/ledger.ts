/**
 * What a run made, written down the moment an answer names it, so the
 * cleanup can remove it whatever failed after. Every name the run gives
 * (filenames, throwaway users' ids) starts with the run's marker, and a
 * conversation with a user given by their token is claimed by its contact
 * (`contacts`), so that what a lost answer made can still be found in the
 * user's lists.
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
  /**
   * Contacts whose conversation with this user the run made, though their ids
   * do not start with the marker (a user given by --token): the cleanup finds
   * and deletes it by its contact, and leaves the user's others alone.
   */
  readonly contacts = new Set<string>();
  /**
   * Contacts whose conversation the stage owes this user (an upload shared
   * with them: the fan-out makes it, asynchronously): the cleanup is not done
   * before it has appeared and been deleted, or it would be left behind.
   */
  readonly awaitedSides = new Set<string>();

  /** `contactId`, when known, settles a side awaited from the stage. */
  conversation(id: string, contactId?: string): void {
    this.conversations.add(id);
    if (contactId !== undefined) this.awaitedSides.delete(contactId);
  }

  /** Whether a conversation with this contact is the run's: every name the run gives starts with its marker. */
  madeWith(contactId: unknown, marker: string): contactId is string {
    return typeof contactId === 'string' && (contactId.startsWith(marker) || this.contacts.has(contactId));
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
