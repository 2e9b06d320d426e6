import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';
import { download, sha256, upload } from '../support/attachments.js';

const run = promisify(execFile);
let t: TestApi;
let directory: string;

beforeAll(async () => {
  t = await startTestApi();
  directory = mkdtempSync(join(tmpdir(), 'attachments-curl-'));
});
afterAll(async () => {
  await t?.close();
  rmSync(directory, { recursive: true, force: true });
});

/** `curl -F`, which writes multipart its own way (its own boundary, part headers and type guessing). */
async function curlUpload(userId: string, form: string[]) {
  const args = ['-sS', '--max-time', '20', '-H', `Authorization: Bearer ${await t.token(userId)}`];
  for (const field of form) args.push('-F', field);
  const { stdout } = await run('curl', [...args, '-w', '\n%{http_code}', `${t.url}/v1/attachments`]);
  const lines = stdout.split('\n');
  return { status: Number(lines.pop()), body: JSON.parse(lines.join('\n')) };
}

describe('real clients', () => {
  it('uploads with curl -F, into a conversation, and downloads the same bytes with the right headers', async () => {
    const bytes = randomBytes(200_000);
    const path = join(directory, 'scan.pdf');
    writeFileSync(path, bytes);
    const conversation = (await t.call('curl-user', 'POST', '/v1/conversations', { form: { contact_id: 'frank' } })).body;

    const response = await curlUpload('curl-user', [`file=@${path}`, `conversation_id=${conversation.id}`, 'message_id=msg_42']);
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({
      filename: 'scan.pdf',
      file_type: 'application/pdf',
      file_size: bytes.length,
      conversation_id: conversation.id,
      message_id: 'msg_42',
    });
    const file = await download(response.body.file_url);
    expect(sha256(file.bytes)).toBe(sha256(bytes));
    expect(file.contentType).toBe('application/pdf');
    expect(file.contentDisposition).toBe(`attachment; filename="scan.pdf"; filename*=UTF-8''scan.pdf`);
  });

  it('keeps a UTF-8 filename that curl sends raw, and an explicit part type', async () => {
    const path = join(directory, 'plain');
    writeFileSync(path, 'données');
    const response = await curlUpload('curl-user', [`file=@${path};filename=Données été 🌞.csv;type=text/csv`]);
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ filename: 'Données été 🌞.csv', file_type: 'text/csv', file_size: Buffer.byteLength('données') });
    const file = await download(response.body.file_url);
    expect(file.bytes.toString('utf8')).toBe('données');
    expect(file.contentType).toBe('text/csv');
    expect(file.contentDisposition).toBe(
      `attachment; filename="Donnees ete _.csv"; filename*=UTF-8''${encodeURIComponent('Données été 🌞.csv')}`,
    );
  });

  it('refuses two files from curl with 400', async () => {
    const path = join(directory, 'twice.txt');
    writeFileSync(path, 'twice');
    const response = await curlUpload('curl-user', [`file=@${path}`, `file=@${path}`]);
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'parameter_invalid', param: 'file' });
  });

  it("uploads with Node's FormData and downloads the same bytes with the right headers", async () => {
    const bytes = randomBytes(70_000);
    const response = await upload(t, 'fetch-user', { bytes, filename: 'clip.mp4', type: 'video/mp4' });
    expect(response.status).toBe(201);
    const file = await download(response.body.file_url);
    expect(sha256(file.bytes)).toBe(sha256(bytes));
    expect(file.contentType).toBe('video/mp4');
    expect(file.contentDisposition).toBe(`attachment; filename="clip.mp4"; filename*=UTF-8''clip.mp4`);
  });
});
