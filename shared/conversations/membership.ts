import type { Groups } from '../auth/groups.js';
import type { Caller } from '../caller.js';
import { NotAMember } from '../domain-errors.js';
import type { Counterpart } from '../dynamo/keys.js';
import type { Conversation } from './model.js';

/**
 * Who belongs to a thread (docs/api.md, "Sharing"). A group's conversation is
 * created, uploaded into and listed only by a user whose token lists the
 * group; a contact's needs nothing. A conversation already held stays its
 * user's to get, update and delete, so those never ask.
 */
export function requireMember(groups: Groups, groupId: string | null, param?: string): void {
  if (groupId !== null && !groups.has(groupId)) throw new NotAMember(groupId, param);
}

/**
 * Whether the caller sees an attachment that `uploadedBy` placed in their
 * side with `counterpart` (null: in no conversation): its uploader always;
 * otherwise a current member of the thread, the contact of a direct one or
 * a user whose token lists the group, whether or not they hold a side.
 */
export function seesAttachment(caller: Caller, uploadedBy: string, counterpart: Counterpart | null): boolean {
  if (caller.userId === uploadedBy) return true;
  if (counterpart === null) return false;
  return counterpart.kind === 'contact' ? counterpart.id === caller.userId : caller.groups.has(counterpart.id);
}

/** Whom a member's side of the same thread is with: the uploader for a direct thread, the same group for a group's. */
export const membersCounterpart = (uploadedBy: string, counterpart: Counterpart): Counterpart =>
  counterpart.kind === 'contact' ? { kind: 'contact', id: uploadedBy } : counterpart;

/** The caller's conversation as its member: 403 not_a_member for a group's that the token no longer lists. */
export function asMember(caller: Caller, conversation: Conversation | undefined, param?: string): Conversation | undefined {
  if (conversation) requireMember(caller.groups, conversation.group_id, param);
  return conversation;
}

/** What the attachments and upload sessions ask of the conversations (ConversationReads). */
export interface MemberConversations {
  memberConversation(caller: Caller, id: string, param?: string): Promise<Conversation | undefined>;
}

/** What a member's view of a shared attachment asks: the id of the member's own side of its thread. */
export interface ThreadSides {
  sideOf(userId: string, counterpart: Counterpart): Promise<string | undefined>;
}
