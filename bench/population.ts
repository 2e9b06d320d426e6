import { type Conversation, newConversation } from '../shared/conversations/model.js';
import { newId } from '../shared/ids.js';

/**
 * Conversations as a heavy user has them: each independently muted, archived
 * and pinned with probability `share`, and a group conversation with the same
 * probability (else one with a contact). A mute is one of three kinds in equal
 * shares: with no end, until a time still ahead, or until a time already past
 * (stored as a mute, not yet written back: the worst case for the muted lists).
 * Half the conversations have activity; of those, `2 × share` were not opened
 * since (unread), the rest were opened at or after it. Deterministic for a
 * given seed, so every run and every size has the same mix.
 */
export interface Population {
  conversations: Conversation[];
  counts: { muted: number; endedMutes: number; archived: number; pinned: number; group: number; unread: number };
}

export function population(count: number, options: { seed: number; share?: number; firstIndex?: number; now?: number }): Population {
  const share = options.share ?? 0.05;
  const random = mulberry32(options.seed);
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const counts = { muted: 0, endedMutes: 0, archived: 0, pinned: 0, group: 0, unread: 0 };
  const conversations: Conversation[] = [];
  for (let offset = 0; offset < count; offset += 1) {
    const index = (options.firstIndex ?? 0) + offset;
    const muted = random() < share;
    const archived = random() < share;
    const pinned = random() < share;
    const group = random() < share;
    const muteKind = Math.floor(random() * 3);
    const active = random() < 0.5;
    const unread = active && random() < 2 * share;
    const counterpart = group ? { kind: 'group' as const, id: `group-${index}` } : { kind: 'contact' as const, id: `contact-${index}` };
    const createdAt = now - index;
    const mutedUntil = !muted || muteKind === 0 ? null : muteKind === 1 ? now + 86_400 : now - 60;
    conversations.push({
      ...newConversation(newId('conv'), counterpart, createdAt),
      is_muted: muted,
      muted_until: mutedUntil,
      is_pinned: pinned,
      archived_at: archived ? createdAt + 60 : null,
      last_active_at: active ? createdAt + 30 : null,
      last_opened_at: active && !unread ? createdAt + 40 : null,
    });
    const ended = mutedUntil !== null && mutedUntil <= now;
    counts.muted += Number(muted && !ended);
    counts.endedMutes += Number(ended);
    counts.archived += Number(archived);
    counts.pinned += Number(pinned);
    counts.group += Number(group);
    counts.unread += Number(unread);
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
