import { newConversation, type Conversation } from '../shared/conversations/model.js';
import { newId } from '../shared/ids.js';

/**
 * Conversations as a heavy user has them: each independently muted, archived
 * and pinned with probability `share`, and a group conversation with the same
 * probability (else one with a contact). Deterministic for a given seed, so
 * every run and every size has the same mix.
 */
export interface Population {
  conversations: Conversation[];
  counts: { muted: number; archived: number; pinned: number; group: number };
}

export function population(count: number, options: { seed: number; share?: number; firstIndex?: number }): Population {
  const share = options.share ?? 0.05;
  const random = mulberry32(options.seed);
  const now = Math.floor(Date.now() / 1000);
  const counts = { muted: 0, archived: 0, pinned: 0, group: 0 };
  const conversations: Conversation[] = [];
  for (let offset = 0; offset < count; offset += 1) {
    const index = (options.firstIndex ?? 0) + offset;
    const muted = random() < share;
    const archived = random() < share;
    const pinned = random() < share;
    const group = random() < share;
    const counterpart = group ? { kind: 'group' as const, id: `group-${index}` } : { kind: 'contact' as const, id: `contact-${index}` };
    const createdAt = now - index;
    conversations.push({
      ...newConversation(newId('conv'), counterpart, createdAt),
      is_muted: muted,
      is_pinned: pinned,
      archived_at: archived ? createdAt + 60 : null,
    });
    counts.muted += Number(muted);
    counts.archived += Number(archived);
    counts.pinned += Number(pinned);
    counts.group += Number(group);
  }
  return { conversations, counts };
}

/** A small seeded PRNG (mulberry32): the same mix on every run (and the same faults in the fault tests). */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
