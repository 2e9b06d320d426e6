import { MIB, PREFERRED_PART_BYTES } from '../../../shared/uploads/part-plan.js';
import { type Check, conversationOf, expect } from '../check.js';
import { describe } from '../client.js';
import { sameBytes, testFile } from '../files.js';

/** One full part and a short last one: S3 assembles two parts, not one passed through. */
const SIZE = PREFERRED_PART_BYTES + MIB;

/**
 * An upload session end to end: the bytes go straight to S3 through the
 * presigned part URLs (never through API Gateway), completion verifies them
 * and makes the attachment. It is left to the conversation's deletion (when
 * the run made the conversation): the conversations stream removes its
 * record, the attachments stream its file.
 */
export const uploadSession: Check = {
  name: `upload session ${SIZE / MIB} MiB, download via file_url`,
  async run(context) {
    const { client, user } = context;
    const conversationId = conversationOf(context);
    const bytes = testFile(context.marker, SIZE);
    const started = await client.call(user.token, 'POST', '/v1/upload_sessions', {
      json: {
        filename: `${context.marker}-session.bin`,
        file_size: SIZE,
        file_type: 'application/octet-stream',
        conversation_id: conversationId,
      },
    });
    if (typeof started.body?.id === 'string') context.made.session(started.body.id);
    expect(started.status === 201, `POST /v1/upload_sessions: ${describe(started)}`);
    const { id, part_size: partSize, part_count: partCount } = started.body as { id: string; part_size: number; part_count: number };

    const numbers = Array.from({ length: partCount }, (_, index) => index + 1);
    const signed = await client.call(user.token, 'POST', `/v1/upload_sessions/${id}/parts`, { json: { part_numbers: numbers } });
    expect(signed.status === 200, `POST /v1/upload_sessions/${id}/parts: ${describe(signed)}`);
    const parts = [];
    for (const { part_number, url } of signed.body.data as { part_number: number; url: string }[]) {
      const start = (part_number - 1) * partSize;
      const put = await fetch(url, { method: 'PUT', body: bytes.subarray(start, start + partSize), signal: AbortSignal.timeout(120_000) });
      const answer = await put.text();
      expect(put.status === 200, `PUT of part ${part_number} to its presigned URL answered ${put.status}: ${answer.slice(0, 300)}`);
      const etag = put.headers.get('etag');
      expect(etag, `PUT of part ${part_number} answered no ETag`);
      parts.push({ part_number, etag });
    }

    const completed = await client.call(user.token, 'POST', `/v1/upload_sessions/${id}/complete`, { json: { parts } });
    if (typeof completed.body?.id === 'string') {
      context.made.sessionCompleted(id);
      // A conversation the user held before the run stays: then the cleanup deletes the attachment itself.
      const removedBy = context.made.conversations.has(conversationId) ? 'conversation' : 'delete';
      context.made.attachment({ id: completed.body.id, fileUrl: completed.body.file_url, removedBy });
    }
    expect(completed.status === 201, `POST /v1/upload_sessions/${id}/complete: ${describe(completed)}`);
    expect(completed.body.file_size === SIZE, `complete answered file_size ${completed.body.file_size}, ${SIZE} were sent`);
    const mismatch = await sameBytes(completed.body.file_url, bytes);
    expect(!mismatch, `${completed.body.id}: ${mismatch}`);
    return `${id} → ${completed.body.id}, ${partCount} parts, sha256 equal`;
  },
};
