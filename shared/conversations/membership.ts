import type { Groups } from '../auth/groups.js';
import { notAMember } from '../http/errors.js';
import type { Conversation } from './model.js';

/**
 * The membership rule of today's data model (docs/api.md, "Groups"): a group's
 * conversation is created, uploaded into and listed only by a user whose
 * token lists the group; a contact's needs nothing. A conversation already
 * held stays its user's to get, update and delete, so those never ask.
 */
export function requireMember(groups: Groups, groupId: string | null, param?: string): void {
  if (groupId !== null && !groups.has(groupId)) throw notAMember(groupId, param);
}

/** What the attachments and upload sessions ask of the conversations (ConversationService). */
export interface MemberConversations {
  memberConversation(userId: string, groups: Groups, id: string, param?: string): Promise<Conversation | undefined>;
}
