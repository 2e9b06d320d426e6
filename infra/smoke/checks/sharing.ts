import { type Check, CheckFailed, CheckSkipped, expect, type SmokeContext, type SmokeUser } from '../check.js';
import { describe } from '../client.js';
import { sameBytes, testFile } from '../files.js';
import { conversationsWith, heldConversationWith } from '../held.js';

const SIZE = 4 * 1024;
const POLL_EVERY_MS = 250;
/** How long the contact waits for the scan's result (AWS publishes no latency for GuardDuty's): then the file is theirs to download. */
const SCANNED_WITHIN_MS = 300_000;

/**
 * Sharing between the run's two users (docs/api.md, "Sharing"): the first
 * uploads a file into their conversation with the second; the second reads
 * it by id and through its file_url, sees their side of the thread turn
 * unread (the fan-out from the attachments stream makes it when they hold
 * none) and the file's attachment.created in their feed, lists the file in
 * that side's thread, and may not rename it (403
 * not_owner). A side either user held before the run is theirs: it is used,
 * never deleted; what the run makes (both sides, the file) the cleanup
 * removes, as whichever user holds it.
 */
export const sharing: Check = {
  name: 'share a file with the second user',
  async run(context) {
    const { client, user, other } = context;
    if (!other) throw new CheckSkipped('no second user (--token-b)');
    if (!user.id || !other.id) throw new CheckSkipped("a token's subject cannot be read: the users' ids are unknown");
    if (user.id === other.id) throw new CheckSkipped('both tokens name the same user');

    const heldByUser = await heldConversationWith(context, user, other.id);
    if (!heldByUser) context.made.contacts.add(other.id);
    const heldByOther = await heldConversationWith(context, other, user.id);
    if (!heldByOther) context.madeForOther.contacts.add(user.id);

    const created = await client.call(user.token, 'POST', '/v1/conversations', { form: { contact_id: other.id } });
    if (typeof created.body?.id === 'string' && !heldByUser) context.made.conversation(created.body.id);
    expect(created.status === (heldByUser ? 200 : 201), `POST /v1/conversations contact_id=${other.id}: ${describe(created)}`);
    const conversationId: string = created.body.id;

    const bytes = testFile(context.marker, SIZE);
    const form = new FormData();
    form.append('file', new Blob([bytes], { type: 'application/octet-stream' }), `${context.marker}-shared.bin`);
    form.append('conversation_id', conversationId);
    const uploaded = await client.call(user.token, 'POST', '/v1/attachments', { body: form });
    if (typeof uploaded.body?.id === 'string')
      context.made.attachment({ id: uploaded.body.id, fileUrl: uploaded.body.file_url, removedBy: 'delete' });
    expect(uploaded.status === 201, `POST /v1/attachments into ${conversationId}: ${describe(uploaded)}`);
    const attachmentId: string = uploaded.body.id;
    const sharedAt = Date.now();
    // From here the stage owes the second user a side of the thread; the cleanup waits for it to remove it.
    if (!heldByOther) context.madeForOther.awaitedSides.add(user.id);
    expect(uploaded.body.uploaded_by === user.id, `the upload answered uploaded_by ${uploaded.body.uploaded_by}, not ${user.id}`);

    const seen = await scannedFor(context, other, attachmentId);
    expect(seen.body.uploaded_by === user.id, `${other.label} reads uploaded_by ${seen.body.uploaded_by}, not ${user.id}`);
    const mismatch = await sameBytes(seen.body.file_url, bytes);
    expect(!mismatch, `${attachmentId} through ${other.label}'s file_url: ${mismatch}`);

    const side = await unreadSideWith(context, other, user.id);
    const unreadAfterMs = Date.now() - sharedAt;
    if (!heldByOther) context.madeForOther.conversation(side.id, user.id);
    if (heldByOther) expect(side.id === heldByOther, `${other.label}'s unread side is ${side.id}, but they held ${heldByOther}`);

    // The fan-out writes the contact's event in the same transaction as their side's activity: it is there now.
    const feed = await client.call(other.token, 'GET', '/v1/events?type=attachment.created&limit=100');
    const delivered = (feed.body?.data ?? []).find(
      (event: { data?: { object?: { id?: string } } }) => event.data?.object?.id === attachmentId,
    );
    expect(
      feed.status === 200 && delivered?.request_id === null && delivered.data.object.conversation_id === side.id,
      `${other.label}'s feed has no attachment.created for ${attachmentId} in their side ${side.id} from no request of theirs: ${delivered ? JSON.stringify(delivered) : describe(feed)}`,
    );

    const reread = await client.call(other.token, 'GET', `/v1/attachments/${attachmentId}`);
    expect(
      reread.status === 200 && reread.body.conversation_id === side.id,
      `GET /v1/attachments/${attachmentId} as ${other.label}: conversation_id ${reread.body?.conversation_id ?? describe(reread)}, not their side ${side.id}`,
    );
    const thread = await client.call(other.token, 'GET', `/v1/attachments?conversation_id=${side.id}`);
    expect(thread.status === 200, `GET /v1/attachments?conversation_id=${side.id} as ${other.label}: ${describe(thread)}`);
    expect(
      thread.body.data.some((attachment: { id: string }) => attachment.id === attachmentId),
      `${other.label}'s thread list of ${side.id} lacks ${attachmentId}`,
    );

    const renamed = await client.call(other.token, 'PUT', `/v1/attachments/${attachmentId}`, {
      form: { filename: `${context.marker}-renamed.bin` },
    });
    expect(
      renamed.status === 403 && renamed.body?.error?.code === 'not_owner',
      `PUT /v1/attachments/${attachmentId} as ${other.label}: ${describe(renamed)}, not 403 not_owner`,
    );
    const unchanged = await client.call(user.token, 'GET', `/v1/attachments/${attachmentId}`);
    expect(
      unchanged.status === 200 && unchanged.body.filename === uploaded.body.filename,
      `after ${other.label}'s refused rename the uploader reads ${unchanged.body?.filename ?? describe(unchanged)}`,
    );

    return `${attachmentId} → ${other.label}'s side ${side.id} and feed, seen unread ${unreadAfterMs} ms after the upload's answer, rename 403 not_owner`;
  },
};

/** Polls, within the context's fanOutWithinMs, until the holder's side with the contact is unread. */
/**
 * The contact's view of the file once it is scanned (docs/api.md,
 * "Scanning"): until then it must hold no link; clean or not scanned, one.
 */
async function scannedFor(context: SmokeContext, reader: SmokeUser, attachmentId: string) {
  const deadline = Date.now() + SCANNED_WITHIN_MS;
  for (;;) {
    const seen = await context.client.call(reader.token, 'GET', `/v1/attachments/${attachmentId}`);
    expect(seen.status === 200, `GET /v1/attachments/${attachmentId} as ${reader.label}, the contact: ${describe(seen)}`);
    const status = seen.body.scan_status;
    if (status === 'clean' || status === 'not_scanned') return seen;
    expect(status === 'pending', `${attachmentId} is ${status} for ${reader.label}: a test file is clean`);
    expect(seen.body.file_url === null, `${reader.label} got a file_url for ${attachmentId} before its scan said clean`);
    if (Date.now() + POLL_EVERY_MS > deadline)
      throw new CheckFailed(`${attachmentId} is still pending ${SCANNED_WITHIN_MS / 1000} s after the upload: no scan result was recorded`);
    await new Promise((resolve) => setTimeout(resolve, POLL_EVERY_MS));
  }
}

async function unreadSideWith(context: SmokeContext, holder: SmokeUser, contactId: string): Promise<{ id: string }> {
  const deadline = Date.now() + context.fanOutWithinMs;
  for (;;) {
    const answer = await conversationsWith(context, holder, contactId, '&unread=true');
    const [side] = answer.body.data;
    if (side) return side;
    if (Date.now() + POLL_EVERY_MS > deadline) {
      throw new CheckFailed(
        `${holder.label} holds no unread conversation with ${contactId} ${Math.round(context.fanOutWithinMs / 1000)} s after the upload: the fan-out did not reach them`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_EVERY_MS));
  }
}
