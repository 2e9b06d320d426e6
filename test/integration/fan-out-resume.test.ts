import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DYNAMODB_TIMEOUTS } from '../../shared/dynamo/client.js';
import type { Json } from '../support/api.js';
import { uploadForm } from '../support/attachments.js';
import { feedOf, type ListedConversation, listAll } from '../support/audit.js';
import { eventually } from '../support/eventually.js';
import type { ProxiedRequest } from '../support/fault-proxy.js';
import { faultyApiForFile } from '../support/faulty-api.js';

/**
 * A fan-out batch that fails midway is retried from where it stopped: the
 * members it had reached are not written again, neither within one record
 * (a group's sides: passed over by the check of their delivered-change
 * records) nor across records (the partial batch response keeps the records
 * before the one that failed). Every fan-out transaction passes the fault
 * proxy, which records them; the members' feeds are read through the API.
 */
// Scanning off: this file counts one protocol's calls under a fault rule, which the scanner's reads and the scan
// results' writes would meet too; scanning under faults is randomized-faults.test.ts's and scanning.test.ts's.
const faultyApi = faultyApiForFile({ env: { SCANNING: 'off' } });

const bodyOf = (request: ProxiedRequest): Record<string, Json> => JSON.parse(request.body.toString('utf8'));
const isCall = (request: ProxiedRequest, operation: string) => request.target === `DynamoDB_20120810.${operation}`;
/**
 * The member a fan-out delivery writes to, or undefined for any other call:
 * a delivery is the transaction that records a change delivered (an `r#`
 * item in the member's partition).
 */
function deliveredTo(request: ProxiedRequest): string | undefined {
  if (!isCall(request, 'TransactWriteItems')) return undefined;
  const marks = (bodyOf(request).TransactItems ?? [])
    .map((item: Json) => item.Put?.Item)
    .filter((item: Json) => item?.sk?.S?.startsWith('r#'));
  return marks[0]?.pk?.S;
}

/**
 * Every fan-out delivery the proxy sees, by member: `tries` counts every request (the SDK's resends too), `transactions`
 * the distinct transactions (ClientRequestTokens). A resend of one transaction, by the SDK after a socket timeout or a
 * lost answer, carries its token again and is one transaction; a member written again by a later run is a transaction
 * of its own, since its events' ids differ (contentToken). Installed before any rule so it sees them all.
 */
function recordDeliveries(f: ReturnType<typeof faultyApi>): {
  tries: Map<string, number>;
  transactions: (member: string) => number;
  order: string[];
  checks: () => number;
} {
  const tries = new Map<string, number>();
  const tokens = new Map<string, Set<string>>();
  const order: string[] = [];
  let checks = 0;
  f.dynamodb.inject({
    match: (request) => {
      const member = deliveredTo(request);
      if (member) {
        tries.set(member, (tries.get(member) ?? 0) + 1);
        tokens.set(member, (tokens.get(member) ?? new Set()).add(bodyOf(request).ClientRequestToken));
        order.push(member);
      }
      if (isCall(request, 'BatchGetItem')) checks += 1;
      return false;
    },
    times: Number.POSITIVE_INFINITY,
    fault: { kind: 'delay', ms: 0 },
  });
  return { tries, transactions: (member) => tokens.get(member)?.size ?? 0, order, checks: () => checks };
}

/** Every try of the deliveries to `victim()` fails before reaching DynamoDB, until the SDK gives up once. */
const failDeliveriesTo = (f: ReturnType<typeof faultyApi>, victim: (request: ProxiedRequest) => boolean) =>
  f.dynamodb.inject({ match: victim, times: DYNAMODB_TIMEOUTS.maxAttempts, fault: { kind: 'reset_before' } });

const attachmentCreated = async (f: ReturnType<typeof faultyApi>, userId: string, groups?: string[]) =>
  (await feedOf(f.t, userId, 'type=attachment.created', groups)).map((event) => event.data.object.id);

describe('a fan-out to a group that fails midway', () => {
  it('is retried without writing again to the members it had reached: each gets one transaction and the upload once in their feed', async () => {
    const f = faultyApi();
    const group = `resume-${randomUUID().slice(0, 8)}`;
    const members = Array.from({ length: 40 }, (_, index) => `resume-${group}-${index}`);
    const sides = new Map<string, string>();
    for (const member of members) {
      const response = await f.t.call(member, 'POST', '/v1/conversations', { form: { group_id: group }, groups: [group] });
      expect(response.status).toBe(201);
      sides.set(member, response.body.id);
    }
    const deliveries = recordDeliveries(f);
    // The 21st member a delivery is sent to (an SDK resend to a member seen before is not a new one): 16 are written
    // at once, so the first 16 and some of the next are reached when it fails, and the last ones are not begun.
    let victim: string | undefined;
    const seen = new Set<string>();
    const failing = failDeliveriesTo(f, (request) => {
      const member = deliveredTo(request);
      if (!member) return false;
      if (victim === undefined && !seen.has(member)) {
        seen.add(member);
        if (seen.size === 21) victim = member;
      }
      return member === victim;
    });

    const uploader = members[0]!;
    const uploaded = await f.t.call(uploader, 'POST', '/v1/attachments', {
      body: uploadForm({ bytes: 'to the group', filename: 'g.txt' }, { conversation_id: sides.get(uploader)! }),
      groups: [group],
    });
    expect(uploaded.status).toBe(201);
    const others = members.slice(1);
    await eventually(
      async () => others.filter((member) => (deliveries.tries.get(member) ?? 0) > 0).length,
      (reached) => reached === others.length && failing.fired === DYNAMODB_TIMEOUTS.maxAttempts,
      60_000,
    );
    // Every member shows the upload once, in their own side, which is unread.
    for (const member of others) {
      const created = await eventually(
        () => attachmentCreated(f, member, [group]),
        (ids) => ids.length > 0,
      );
      expect(created, member).toEqual([uploaded.body.id]);
      const unread = await listAll<ListedConversation>(f.t, member, `/v1/conversations?group_id=${group}&unread=true`, [group]);
      expect(
        unread.map((side) => side.id),
        member,
      ).toEqual([sides.get(member)]);
    }
    // The victim's transaction failed on every try before DynamoDB saw it; the retry wrote to it in a transaction of
    // its own. Every other member got one transaction: the retry passed over the ones reached before it failed.
    // (Counted as transactions, not requests: on a starved machine the SDK may resend one after its socket timeout.)
    expect(victim).toBeDefined();
    const reachedBeforeFailure = new Set(deliveries.order.slice(0, deliveries.order.indexOf(victim!))).size;
    expect(reachedBeforeFailure).toBeGreaterThanOrEqual(16);
    expect(failing.fired).toBe(DYNAMODB_TIMEOUTS.maxAttempts);
    for (const member of others) expect(deliveries.transactions(member), member).toBe(member === victim ? 2 : 1);
    // The check ran, on the first run and on the retry.
    expect(deliveries.checks()).toBeGreaterThanOrEqual(2);
  });
});

describe('a fan-out batch of several records that fails at a later one', () => {
  it('keeps the records before it: their members are not written again when the rest is retried', async () => {
    const f = faultyApi();
    const run = randomUUID().slice(0, 8);
    const pairs = [0, 1, 2].map((index) => ({ uploader: `batch-${run}-up-${index}`, contact: `batch-${run}-to-${index}` }));
    const sides: string[] = [];
    for (const { uploader, contact } of pairs) {
      const response = await f.t.call(uploader, 'POST', '/v1/conversations', { form: { contact_id: contact } });
      expect(response.status).toBe(201);
      sides.push(response.body.id);
    }
    // Wait until the consumers are idle, then keep the stream pollers from reading until the three uploads are
    // in the stream, so that they reach the fan-out in one batch.
    const held = f.dynamodb.inject({
      match: (request) => request.target === 'DynamoDBStreams_20120810.GetRecords',
      times: Number.POSITIVE_INFINITY,
      fault: { kind: 'hold' },
    });
    await held.hit;
    const deliveries = recordDeliveries(f);
    const failing = failDeliveriesTo(f, (request) => deliveredTo(request) === pairs[1]!.contact);
    const uploads: string[] = [];
    for (const [index, { uploader }] of pairs.entries()) {
      const response = await f.t.call(uploader, 'POST', '/v1/attachments', {
        body: uploadForm({ bytes: `upload ${index}`, filename: 'b.txt' }, { conversation_id: sides[index]! }),
      });
      expect(response.status).toBe(201);
      uploads.push(response.body.id);
    }
    held.release();

    for (const [index, { contact }] of pairs.entries()) {
      const created = await eventually(
        () => attachmentCreated(f, contact),
        (ids) => ids.length > 0,
        60_000,
      );
      expect(created, contact).toEqual([uploads[index]]);
    }
    expect(failing.fired).toBe(DYNAMODB_TIMEOUTS.maxAttempts);
    // The first record's member got one transaction: the retry began at the second record, whose member's
    // transaction failed on every try and then got one of its own, with the third's.
    expect(deliveries.transactions(pairs[0]!.contact)).toBe(1);
    expect(deliveries.transactions(pairs[1]!.contact)).toBe(2);
    expect(deliveries.transactions(pairs[2]!.contact)).toBe(1);
  });
});
