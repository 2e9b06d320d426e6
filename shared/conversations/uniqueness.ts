import { type Counterpart, counterpartKey } from '../dynamo/keys.js';
import type { Item } from './item-codec.js';

/** The attribute of a uniqueness record that names its conversation. */
export const HOLDER = 'conversation_id';

/**
 * The record that keeps one conversation per (user, contact) and per (user,
 * group): under the user's partition, keyed by the counterpart, naming the
 * conversation that holds the place.
 */
export function uniquenessItem(userId: string, counterpart: Counterpart, conversationId: string): Item {
  return { ...counterpartKey(userId, counterpart), [HOLDER]: conversationId };
}

export const uniquenessKey = counterpartKey;

/** The conversation a uniqueness record names. */
export const holderOf = (item: Item): string => item[HOLDER] as string;
