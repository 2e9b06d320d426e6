import { randomBytes } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyKey } from '../../shared/dynamo/keys.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { download, type FileSpec, fieldPart, filePart, multipartBody, sha256, storedFileKeys, uploadForm } from '../support/attachments.js';

describe('Idempotency-Key on POST /v1/attachments', () => {
  let t: TestApi;
  beforeAll(async () => {
    t = await startTestApi();
  });
  afterAll(() => t.close());

  const uploadWithKey = (userId: string, key: string, file: FileSpec, fields: Record<string, string> = {}) =>
    t.call(userId, 'POST', '/v1/attachments', { body: uploadForm(file, fields), headers: { 'idempotency-key': key } });
  const listed = async (userId: string) => (await t.call(userId, 'GET', '/v1/attachments')).body.data;

  it('replays the upload: one attachment, one stored file, and a file_url that still downloads the bytes', async () => {
    const bytes = randomBytes(2048);
    const first = await uploadWithKey('uploader', 'up-1', { bytes, filename: 'a.bin', type: 'application/octet-stream' });
    const again = await uploadWithKey('uploader', 'up-1', { bytes, filename: 'a.bin', type: 'application/octet-stream' });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const { file_url: _first, file_url_expires_at: _firstExpiry, ...firstRecord } = first.body;
    const { file_url: replayedUrl, file_url_expires_at: _replayedExpiry, ...replayedRecord } = again.body;
    expect(replayedRecord).toEqual(firstRecord);
    expect(sha256((await download(replayedUrl)).bytes)).toBe(sha256(bytes));
    expect(await listed('uploader')).toHaveLength(1);
    expect((await storedFileKeys(t.api.s3Endpoint)).filter((key) => key.includes(first.body.id))).toHaveLength(1);
  });

  it('answers a replay of an attachment deleted since with 404 resource_missing naming it, and creates nothing again', async () => {
    const first = await uploadWithKey('regretful', 'up-1', { bytes: 'gone soon', filename: 'g.txt' });
    expect(first.status).toBe(201);
    expect((await t.call('regretful', 'DELETE', `/v1/attachments/${first.body.id}`)).status).toBe(200);
    const again = await uploadWithKey('regretful', 'up-1', { bytes: 'gone soon', filename: 'g.txt' });
    expect(again.status).toBe(404);
    expect(again.body.error).toMatchObject({ type: 'invalid_request_error', code: 'resource_missing' });
    expect(again.body.error.message).toContain(first.body.id);
    expect(await listed('regretful')).toEqual([]);
  });

  it('stores no file_url in the idempotency record', async () => {
    await uploadWithKey('link-keeper', 'up-1', { bytes: 'x', filename: 'x.txt' });
    const db = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: t.api.dynamodbEndpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      }),
    );
    const { Item } = await db.send(
      new GetCommand({ TableName: t.api.config.idempotencyTable, Key: idempotencyKey('link-keeper', 'up-1'), ConsistentRead: true }),
    );
    expect(Item?.state).toBe('completed');
    expect(Item?.response).not.toContain('file_url');
    expect(Item?.response).not.toContain('X-Amz-Signature');
  });

  it('treats the same file and fields from another client (another multipart boundary) as the same request', async () => {
    const first = await uploadWithKey(
      'clients',
      'up-1',
      { bytes: 'same bytes', filename: 'same.txt', type: 'text/plain' },
      { message_id: 'm1' },
    );
    const handmade = multipartBody(
      [fieldPart('message_id', 'm1'), filePart('same bytes', 'form-data; name="file"; filename="same.txt"', 'text/plain')],
      'another-client-boundary',
    );
    const again = await t.call('clients', 'POST', '/v1/attachments', {
      body: handmade,
      headers: { 'content-type': 'multipart/form-data; boundary=another-client-boundary', 'idempotency-key': 'up-1' },
    });
    expect(again.status).toBe(201);
    expect(again.body.id).toBe(first.body.id);
  });

  it.each([
    ['other bytes', { bytes: 'other bytes', filename: 'same.txt', type: 'text/plain' }, {}],
    ['another filename', { bytes: 'same bytes', filename: 'other.txt', type: 'text/plain' }, {}],
    ['another type', { bytes: 'same bytes', filename: 'same.txt', type: 'text/csv' }, {}],
    ['another message_id', { bytes: 'same bytes', filename: 'same.txt', type: 'text/plain' }, { message_id: 'm2' }],
  ])('answers 409 idempotency_key_reused for the same key with %s', async (_, file, fields) => {
    await uploadWithKey('changes', 'up-1', { bytes: 'same bytes', filename: 'same.txt', type: 'text/plain' });
    const other = await uploadWithKey('changes', 'up-1', file, fields);
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    expect(await listed('changes')).toHaveLength(1);
  });

  it('makes one attachment of ten concurrent uploads with one key', async () => {
    const bytes = randomBytes(4096);
    const responses = await Promise.all(Array.from({ length: 10 }, () => uploadWithKey('racer', 'up-1', { bytes, filename: 'race.bin' })));
    expect(responses.map((response) => response.status)).toEqual(Array(10).fill(201));
    expect(new Set(responses.map((response) => response.body.id)).size).toBe(1);
    expect(await listed('racer')).toHaveLength(1);
    const id = responses[0]!.body.id;
    expect((await storedFileKeys(t.api.s3Endpoint)).filter((key) => key.includes(`/${id}/`))).toHaveLength(1);
  });
});
