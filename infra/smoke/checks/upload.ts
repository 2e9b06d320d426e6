import { type Check, conversationOf, expect } from '../check.js';
import { describe } from '../client.js';
import { sameBytes, testFile } from '../files.js';

const SIZE = 1024 * 1024;

/**
 * A multipart upload through API Gateway (binary media type, base64 into
 * Lambda, PutObject) and the same bytes back through the presigned file_url.
 * The cleanup deletes it itself: the attachments stream then removes the file.
 */
export const uploadAndDownload: Check = {
  name: 'upload 1 MiB, download via file_url',
  async run(context) {
    const conversationId = conversationOf(context);
    const bytes = testFile(context.marker, SIZE);
    const form = new FormData();
    form.append('file', new Blob([bytes], { type: 'application/octet-stream' }), `${context.marker}-upload.bin`);
    form.append('conversation_id', conversationId);
    const uploaded = await context.client.call(context.user.token, 'POST', '/v1/attachments', { body: form });
    if (typeof uploaded.body?.id === 'string')
      context.made.attachment({ id: uploaded.body.id, fileUrl: uploaded.body.file_url, removedBy: 'delete' });
    expect(uploaded.status === 201, `POST /v1/attachments: ${describe(uploaded)}`);
    expect(uploaded.body.file_size === SIZE, `POST /v1/attachments answered file_size ${uploaded.body.file_size}, ${SIZE} were sent`);
    const mismatch = await sameBytes(uploaded.body.file_url, bytes);
    expect(!mismatch, `${uploaded.body.id}: ${mismatch}`);
    return `${uploaded.body.id}, sha256 equal`;
  },
};
