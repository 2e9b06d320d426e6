import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';
import { download, sha256, upload } from '../support/attachments.js';

// The default limit, as deployed: 4 MiB fits through API Gateway and Lambda's 6 MB once base64-encoded.
const DEFAULT_LIMIT = 4 * 1024 * 1024;
let t: TestApi;

beforeAll(async () => {
  t = await startTestApi();
});
afterAll(async () => {
  await t?.close();
});

describe('the default size limit of 4 MiB', () => {
  it('accepts a file of exactly 4,194,304 bytes and serves it back intact', async () => {
    const bytes = randomBytes(DEFAULT_LIMIT);
    const response = await upload(t, 'sizer', { bytes, filename: 'exact.bin' });
    expect(response.status).toBe(201);
    expect(response.body.file_size).toBe(DEFAULT_LIMIT);
    expect(sha256((await download(response.body.file_url)).bytes)).toBe(sha256(bytes));
  });

  it('refuses a file of 4,194,305 bytes with 413 file_too_large, storing nothing', async () => {
    const response = await upload(t, 'oversizer', { bytes: randomBytes(DEFAULT_LIMIT + 1), filename: 'over.bin' });
    expect(response.status).toBe(413);
    expect(response.body.error).toMatchObject({ type: 'invalid_request_error', code: 'file_too_large', param: 'file' });
    expect((await t.call('oversizer', 'GET', '/v1/attachments')).body.data).toEqual([]);
  });
});
