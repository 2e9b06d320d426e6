import { describe, expect, it } from 'vitest';
import { eventId } from '../../../shared/events/ids.js';
import type { FeedEvent, UserView } from '../../support/audit.js';
import { auditEvents } from '../../support/randomized/events-audit.js';
import type { Attempt, Ledger } from '../../support/randomized/workload.js';

/**
 * The randomized run's events audit, fed a hand-made ledger, end state and
 * feeds: a run whose events are right passes, and each way of being wrong is
 * reported, naming the operation.
 */

const U = 'chaos-1-u0';
const V = 'chaos-1-u1';

const answer = (status: number, requestId: string, more: Partial<Attempt> = {}): Attempt => ({ status, requestId, ...more });

type Draft = Omit<FeedEvent, 'id' | 'created_at'>;
const draft = (type: string, object: Record<string, unknown>, requestId: string | null): Draft => ({
  type,
  data: { object },
  request_id: requestId,
});

/** A feed as the API lists it: newest first, ids and times from the order the drafts were written in. */
const listed = (drafts: readonly Draft[]): FeedEvent[] =>
  drafts.map((event, index) => ({ ...event, id: eventId(index + 1), created_at: 1_767_225_600 + index })).reverse();

/**
 * U creates a conversation with V, pins a message in it (the first attempt's
 * answer lost in a 503 after it committed, the retry a no-op), uploads into
 * it under a key (the second answer a replay), renames the file, and is
 * refused the delete of an attachment that does not exist; V's feed holds
 * what reached V from U, without request ids.
 */
function run() {
  const ledger: Ledger = {
    users: [U, V],
    cast: {
      users: [U, V],
      passive: [],
      stranger: 'chaos-1-stranger',
      groupsOf: new Map([
        [U, []],
        [V, []],
      ]),
    },
    creates: [{ op: 1, userId: U, counterpart: V, kind: 'contact', attempts: [answer(201, 'req-1')], id: 'conv_A' }],
    conversationUpdates: [
      { op: 2, userId: U, targetId: 'conv_A', value: 'pin-2', attempts: [answer(503, 'req-2a'), answer(200, 'req-2b')] },
    ],
    conversationDeletes: [],
    uploads: [
      {
        op: 3,
        userId: U,
        key: 'upload-1-3',
        bytes: Buffer.from('x'),
        filename: `op3-${U}.bin`,
        conversationId: 'conv_A',
        attempts: [answer(201, 'req-3a'), answer(201, 'req-3b', { replayed: true })],
        id: 'att_B',
        startedAt: 0,
      },
    ],
    renames: [{ op: 4, userId: U, targetId: 'att_B', value: 'op3-renamed-by-4.txt', attempts: [answer(200, 'req-4')] }],
    attachmentDeletes: [{ op: 5, userId: U, targetId: 'att_X', attempts: [answer(404, 'req-5', { code: 'resource_missing' })] }],
    operations: {
      create_conversation: 1,
      update_conversation: 1,
      delete_conversation: 0,
      upload: 0,
      upload_with_key: 1,
      rename_attachment: 1,
      delete_attachment: 1,
    },
  };
  const views = new Map<string, UserView>([
    [
      U,
      {
        conversations: [{ id: 'conv_A', contact_id: V, group_id: null, pinned_message_id: 'pin-2', created_at: 1, last_active_at: 2 }],
        attachments: [
          {
            id: 'att_B',
            conversation_id: 'conv_A',
            filename: 'op3-renamed-by-4.txt',
            file_url: 'https://files/att_B',
            file_size: 1,
            scan_status: 'clean',
          },
        ],
      },
    ],
    [V, { conversations: [], attachments: [] }],
  ]);
  const feedOfU: Draft[] = [
    draft('conversation.created', { id: 'conv_A', contact_id: V }, 'req-1'),
    draft('conversation.updated', { id: 'conv_A', pinned_message_id: 'pin-2' }, 'req-2a'),
    draft('attachment.created', { id: 'att_B', filename: `op3-${U}.bin` }, 'req-3a'),
    draft('conversation.updated', { id: 'conv_A', last_active_at: 2 }, 'req-3a'),
    draft('attachment.updated', { id: 'att_B', filename: 'op3-renamed-by-4.txt' }, 'req-4'),
  ];
  const feedOfV: Draft[] = [
    draft('conversation.created', { id: 'conv_V' }, null),
    draft('attachment.created', { id: 'att_B', filename: `op3-${U}.bin`, uploaded_by: U, conversation_id: 'conv_V' }, null),
  ];
  const audit = () =>
    auditEvents(
      ledger,
      views,
      new Map([
        [U, listed(feedOfU)],
        [V, listed(feedOfV)],
      ]),
    );
  return { ledger, views, feedOfU, feedOfV, audit };
}

const kinds = (violations: { kind: string }[]) => violations.map((violation) => violation.kind);

describe('the events audit of the randomized run', () => {
  it('passes a run whose every change has its one event', () => {
    expect(run().audit()).toEqual([]);
  });

  it('reports an acknowledged change whose event is missing, naming the operation', () => {
    const r = run();
    r.feedOfU.splice(4, 1);
    expect(r.audit()).toEqual([
      { kind: 'acknowledged change without its event', detail: `${U} rename op4 (200): attachment.updated of att_B` },
    ]);
  });

  it('reports a second event under one Idempotency-Key, on the replayed answer', () => {
    const r = run();
    r.feedOfU.push(draft('attachment.created', { id: 'att_B', filename: `op3-${U}.bin` }, 'req-3b'));
    const violations = r.audit();
    expect(kinds(violations).sort()).toEqual(
      ['event for a replayed answer', 'two events for one Idempotency-Key', 'two events for one change'].sort(),
    );
    expect(violations.find((v) => v.kind === 'two events for one Idempotency-Key')!.detail).toContain(
      `${U} upload op3 (201, 201 replayed)`,
    );
  });

  it('reports a second event of an update retried after its first attempt committed', () => {
    const r = run();
    r.feedOfU.push(draft('conversation.updated', { id: 'conv_A', pinned_message_id: 'pin-2' }, 'req-2b'));
    expect(kinds(r.audit())).toEqual(['two events for one operation']);
  });

  it("passes an update retried after another request changed the same conversation: the retry's change is a new one", () => {
    const r = run();
    r.ledger.conversationUpdates.push({ op: 6, userId: U, targetId: 'conv_A', value: 'pin-6', attempts: [answer(200, 'req-6')] });
    r.ledger.operations.update_conversation = 2;
    r.feedOfU.push({
      ...draft('conversation.updated', { id: 'conv_A', pinned_message_id: 'pin-6' }, 'req-6'),
      data: { object: { id: 'conv_A', pinned_message_id: 'pin-6' }, previous_attributes: { pinned_message_id: 'pin-2' } },
    });
    r.feedOfU.push(draft('conversation.updated', { id: 'conv_A', pinned_message_id: 'pin-2' }, 'req-2b'));
    expect(kinds(r.audit())).toEqual([]);
  });

  it('reports an event for a refused request', () => {
    const r = run();
    r.feedOfU.push(draft('attachment.deleted', { id: 'att_X', deleted: true }, 'req-5'));
    const violations = r.audit();
    expect(kinds(violations)).toEqual(['event for a refused request']);
    expect(violations[0]!.detail).toContain(`${U} delete op5 (404)`);
  });

  it('reports an event for the 200 of an existing conversation', () => {
    const r = run();
    r.ledger.creates.push({ op: 6, userId: U, counterpart: V, kind: 'contact', attempts: [answer(200, 'req-6')], id: 'conv_A' });
    r.feedOfU.push(draft('conversation.created', { id: 'conv_A', contact_id: V }, 'req-6'));
    expect(kinds(r.audit())).toEqual(['event for the 200 of an existing conversation']);
  });

  it("reports events that name no request the workload sent, or sit in another user's feed", () => {
    const r = run();
    r.feedOfU.push(draft('attachment.deleted', { id: 'att_B', deleted: true }, 'req-nobody'));
    r.feedOfV.push(draft('conversation.updated', { id: 'conv_A', pinned_message_id: 'pin-2' }, 'req-2a'));
    expect(kinds(r.audit()).sort()).toEqual([
      'event for a request nobody sent',
      'event in the feed of a user who did not send its request',
    ]);
  });

  it('reports an event that does not show its change, or names another object', () => {
    const r = run();
    r.feedOfU[1] = draft('conversation.updated', { id: 'conv_Z', pinned_message_id: 'pin-1' }, 'req-2a');
    expect(kinds(r.audit()).sort()).toEqual([
      'acknowledged change without its event',
      'event does not show its change',
      'event names another object',
    ]);
  });

  it('holds an unanswered request to the end state: one event when it shows the change, none when it shows none', () => {
    const r = run();
    // A delete answered 503 whose conversation is gone, and nothing else could have removed it: it happened.
    r.ledger.conversationDeletes.push({ op: 7, userId: U, targetId: 'conv_C', attempts: [answer(503, 'req-7')] });
    // An upload answered 503 whose file is nowhere and could not have been cleaned up: it did not happen.
    r.ledger.uploads.push({
      op: 8,
      userId: U,
      bytes: Buffer.from('y'),
      filename: `op8-${U}.bin`,
      attempts: [answer(503, 'req-8')],
      startedAt: 0,
    });
    r.feedOfU.push(draft('attachment.created', { id: 'att_C', filename: `op8-${U}.bin` }, 'req-8'));
    const violations = r.audit();
    expect(violations).toEqual([
      { kind: 'change shown in the end state without its event', detail: `${U} delete op7 (503): conversation.deleted of conv_C` },
      { kind: 'event without its change', detail: expect.stringContaining(`${U} upload op8 (503)`) },
    ]);
    r.feedOfU.pop();
    r.feedOfU.push(draft('conversation.deleted', { id: 'conv_C', deleted: true }, 'req-7'));
    expect(r.audit()).toEqual([]);
  });

  it("reports an event carrying the request id of an upload session's start", () => {
    const r = run();
    r.ledger.uploads[0]!.session = { id: 'upl_A', steps: [answer(201, 'req-3-start'), answer(200, 'req-3-parts')] };
    expect(r.audit()).toEqual([]);
    r.feedOfU.push(draft('attachment.created', { id: 'att_B', filename: `op3-${U}.bin` }, 'req-3-start'));
    expect(kinds(r.audit())).toEqual(['event for an upload session step', 'two events for one change']);
  });

  it('matches an event of a request whose answer was lost (no request id) by its type and object', () => {
    const r = run();
    r.ledger.attachmentDeletes.push({ op: 9, userId: U, targetId: 'att_B', attempts: [{ status: -1, problem: 'socket hang up' }] });
    r.views.get(U)!.attachments = [];
    r.feedOfU.push(draft('attachment.deleted', { id: 'att_B', deleted: true }, 'req-unseen'));
    expect(r.audit()).toEqual([]);
    r.feedOfU.pop();
    expect(kinds(r.audit())).toEqual(['change shown in the end state without its event']);
  });

  it('reports a feed that is not newest first, an event listed twice, and an event without its object', () => {
    const r = run();
    const feed = listed(r.feedOfU);
    [feed[1], feed[2]] = [feed[2]!, feed[1]!];
    feed.push(feed[0]!);
    const nullEvents = listed(r.feedOfV);
    nullEvents[0] = { ...nullEvents[0]!, data: { object: {} } };
    const violations = auditEvents(
      r.ledger,
      r.views,
      new Map([
        [U, feed],
        [V, nullEvents],
      ]),
    );
    expect(kinds(violations)).toEqual(
      expect.arrayContaining([
        'feed not newest first',
        'feed created_at goes forward',
        'event listed twice',
        'event without data.object.id',
      ]),
    );
  });

  it("reports what reached a member twice, a removal of an attachment still there, another member's event in the uploader's feed, and an upload nobody made", () => {
    const delivered = (type: string, object: Record<string, unknown>) => draft(type, object, null);
    const seenByV = { id: 'att_B', filename: `op3-${U}.bin`, uploaded_by: U };
    const cases: [string, (r: ReturnType<typeof run>) => void][] = [
      ['two events for one change', (r) => r.feedOfV.push(delivered('attachment.created', seenByV))],
      [
        'attachment.deleted for an attachment still there',
        (r) => r.feedOfV.push(delivered('attachment.deleted', { id: 'att_B', deleted: true })),
      ],
      ["another member's event in the uploader's own feed", (r) => r.feedOfU.push(delivered('attachment.updated', seenByV))],
      [
        'event for an upload nobody made',
        (r) => r.feedOfV.push(delivered('attachment.created', { id: 'att_Z', filename: 'op9-made-up.bin', uploaded_by: U })),
      ],
    ];
    for (const [kind, spoil] of cases) {
      const r = run();
      spoil(r);
      expect(kinds(r.audit()), kind).toEqual([kind]);
    }
    // Renames may reach a member as often as they happen; the uploader's own removal by the cleanup has no request either.
    const r = run();
    r.feedOfV.push(delivered('attachment.updated', seenByV), delivered('attachment.updated', seenByV));
    r.feedOfU.push(delivered('attachment.deleted', { id: 'att_gone', deleted: true }));
    expect(r.audit()).toEqual([]);
  });
});
