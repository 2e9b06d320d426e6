import { conversationKey, contactKey, flagKey, groupKey, type Counterpart } from '../dynamo/keys.js';
import { conversationIndexes } from '../dynamo/tables.js';
import type { Conversation, ConversationChanges } from './model.js';

export type Item = Record<string, unknown>;

/**
 * A conversation as a DynamoDB item and back: its fields, its key, and the
 * index keys that the lists query (both values of each flag, the sparse
 * group and contact keys), kept in step by every write.
 */
export function toItem(userId: string, conversation: Conversation): Item {
  return {
    ...conversationKey(userId, conversation.id),
    ...conversation,
    [conversationIndexes.muted.partitionKey]: flagKey(userId, conversation.is_muted),
    [conversationIndexes.pinned.partitionKey]: flagKey(userId, conversation.is_pinned),
    [conversationIndexes.archived.partitionKey]: flagKey(userId, conversation.archived_at !== null),
    ...(conversation.group_id ? { [conversationIndexes.group.partitionKey]: groupKey(userId, conversation.group_id) } : {}),
    ...(conversation.contact_id ? { [conversationIndexes.contact.partitionKey]: contactKey(userId, conversation.contact_id) } : {}),
  };
}

export function fromItem(item: Item): Conversation {
  const orNull = <T>(value: unknown) => (value === undefined ? null : (value as T));
  return {
    id: item.id as string,
    contact_id: orNull(item.contact_id),
    group_id: orNull(item.group_id),
    pinned_message_id: orNull(item.pinned_message_id),
    is_pinned: item.is_pinned === true,
    is_muted: item.is_muted === true,
    last_active_at: orNull(item.last_active_at),
    last_opened_at: orNull(item.last_opened_at),
    created_at: item.created_at as number,
    archived_at: orNull(item.archived_at),
  };
}

export function counterpartOf(conversation: Conversation): Counterpart {
  return conversation.group_id ? { kind: 'group', id: conversation.group_id } : { kind: 'contact', id: conversation.contact_id ?? '' };
}

export interface UpdateParts {
  UpdateExpression: string;
  ExpressionAttributeNames: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
}

/**
 * SET and REMOVE clauses for exactly the given fields, keeping the index keys
 * in step. Attribute names always go through ExpressionAttributeNames, so no
 * field can ever collide with a DynamoDB reserved word.
 */
export function updateExpression(userId: string, changes: ConversationChanges): UpdateParts | undefined {
  const set: string[] = [];
  const remove: string[] = [];
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const name = (attribute: string) => {
    const placeholder = `#a${Object.keys(names).length}`;
    names[placeholder] = attribute;
    return placeholder;
  };
  const assign = (attribute: string, value: unknown) => {
    const placeholder = `:v${Object.keys(values).length}`;
    set.push(`${name(attribute)} = ${placeholder}`);
    values[placeholder] = value;
  };
  if (changes.is_pinned !== undefined) {
    assign('is_pinned', changes.is_pinned);
    assign(conversationIndexes.pinned.partitionKey, flagKey(userId, changes.is_pinned));
  }
  if (changes.is_muted !== undefined) {
    assign('is_muted', changes.is_muted);
    assign(conversationIndexes.muted.partitionKey, flagKey(userId, changes.is_muted));
  }
  if (changes.pinned_message_id !== undefined) {
    if (changes.pinned_message_id === null) remove.push(name('pinned_message_id'));
    else assign('pinned_message_id', changes.pinned_message_id);
  }
  if (changes.archived_at !== undefined) {
    if (changes.archived_at === null) remove.push(name('archived_at'));
    else assign('archived_at', changes.archived_at);
    assign(conversationIndexes.archived.partitionKey, flagKey(userId, changes.archived_at !== null));
  }
  if (set.length === 0 && remove.length === 0) return undefined;
  const clauses = [set.length ? `SET ${set.join(', ')}` : '', remove.length ? `REMOVE ${remove.join(', ')}` : ''];
  return {
    UpdateExpression: clauses.filter(Boolean).join(' '),
    ExpressionAttributeNames: names,
    ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
  };
}
