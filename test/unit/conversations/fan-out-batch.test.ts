import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { latestOfEachSender, type SharedUpload } from '../../../shared/conversations/fan-out.js';

const users = ['u1', 'u2', 'u3'];
const upload: fc.Arbitrary<SharedUpload> = fc.record({
  attachmentId: fc.uuid().map((id) => `att_${id}`),
  uploadedBy: fc.constantFrom(...users),
  counterpart: fc.oneof(
    fc.record({ kind: fc.constant('contact' as const), id: fc.constantFrom(...users) }),
    fc.record({ kind: fc.constant('group' as const), id: fc.constantFrom('g1', 'g2') }),
  ),
  createdAt: fc.integer({ min: 1_800_000_000, max: 1_800_000_010 }),
});

/** Whom an upload reaches: the same for every upload of one uploader into one thread (a direct thread is the same from both sides). */
const senderOf = (u: SharedUpload) => {
  const thread = u.counterpart.kind === 'group' ? `g:${u.counterpart.id}` : `d:${[u.uploadedBy, u.counterpart.id].sort().join(',')}`;
  return `${u.uploadedBy}|${thread}`;
};

describe('latestOfEachSender', () => {
  it('keeps one upload per uploader and thread, the latest, so the forward-only writes end where all of them would', () => {
    fc.assert(
      fc.property(fc.array(upload, { maxLength: 40 }), (batch) => {
        const kept = latestOfEachSender(batch);
        const senders = new Set(batch.map(senderOf));
        expect(kept.map(senderOf).sort()).toEqual([...senders].sort());
        for (const sender of senders) {
          const latest = Math.max(...batch.filter((u) => senderOf(u) === sender).map((u) => u.createdAt));
          const chosen = kept.find((u) => senderOf(u) === sender)!;
          expect(chosen.createdAt).toBe(latest);
          expect(batch).toContain(chosen);
        }
      }),
    );
  });

  it('keeps uploads of two members into one direct thread apart: each reaches the other', () => {
    const at = 1_800_000_000;
    const fromA: SharedUpload = { attachmentId: 'att_a', uploadedBy: 'a', counterpart: { kind: 'contact', id: 'b' }, createdAt: at };
    const fromB: SharedUpload = { attachmentId: 'att_b', uploadedBy: 'b', counterpart: { kind: 'contact', id: 'a' }, createdAt: at + 1 };
    expect(latestOfEachSender([fromA, fromB])).toEqual([fromA, fromB]);
  });
});
