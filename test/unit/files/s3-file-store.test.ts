import { describe, expect, it } from 'vitest';
import { S3FileStore } from '../../../shared/files/s3-file-store.js';
import { S3Bucket } from '../../../shared/s3/bucket.js';
import { S3Presigner } from '../../../shared/s3/presigner.js';
import { RecordingTransport, type ScriptedAnswer } from '../../support/recording-s3.js';

const ADDRESS = {
  region: 'us-east-1',
  bucket: 'attachments',
  endpoint: 'http://127.0.0.1:4568',
  credentials: { accessKeyId: 'A', secretAccessKey: 'B' },
};

function storeAnswering(answer: (query: Record<string, unknown>) => ScriptedAnswer) {
  const transport = new RecordingTransport((request) => answer(request.query as Record<string, unknown>));
  return { store: new S3FileStore(new S3Bucket({ ...ADDRESS, maxAttempts: 3 }, transport), new S3Presigner(ADDRESS)), transport };
}

const page = (parts: number[], next?: number) => ({
  status: 200,
  body: `<?xml version="1.0" encoding="UTF-8"?>
<ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <IsTruncated>${next === undefined ? 'false' : 'true'}</IsTruncated>${next === undefined ? '' : `<NextPartNumberMarker>${next}</NextPartNumberMarker>`}
  ${parts.map((n) => `<Part><PartNumber>${n}</PartNumber><ETag>"etag-${n}"</ETag><Size>${n * 10}</Size></Part>`).join('\n  ')}
</ListPartsResult>`,
});

describe('S3FileStore', () => {
  it('lists every part of an upload, page after page from each NextPartNumberMarker', async () => {
    const { store, transport } = storeAnswering((query) => {
      if (query['part-number-marker'] === undefined) return page([1, 2], 2);
      if (query['part-number-marker'] === '2') return page([3, 4], 4);
      return page([5]);
    });
    const parts = await store.listParts('files/k', 'upload-1');
    expect(parts.map((part) => part.part_number)).toEqual([1, 2, 3, 4, 5]);
    expect(parts[4]).toEqual({ part_number: 5, size: 50, etag: '"etag-5"' });
    expect(transport.requests.map((request) => request.query['part-number-marker'])).toEqual([undefined, '2', '4']);
  });

  it('reads an upload S3 no longer knows as one without parts, and its abort as done', async () => {
    const noSuchUpload = {
      status: 404,
      body: '<Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>',
    };
    const { store } = storeAnswering(() => noSuchUpload);
    expect(await store.listParts('files/k', 'gone')).toEqual([]);
    await expect(store.abortMultipart('files/k', 'gone')).resolves.toBeUndefined();
    expect(await store.assemble('files/k', 'gone', [{ part_number: 1, etag: '"e"' }])).toBe('no_such_upload');
  });

  it("turns S3's refusals of an assembly into the client's errors, and a missing object into no size", async () => {
    const { store } = storeAnswering(() => ({
      status: 400,
      body: '<Error><Code>EntityTooSmall</Code><Message>Your proposed upload is smaller than the minimum allowed object size.</Message></Error>',
    }));
    expect(await store.assemble('files/k', 'u', [{ part_number: 1, etag: '"e"' }])).toEqual({
      refused: 'part_too_small',
      message: 'Your proposed upload is smaller than the minimum allowed object size.',
    });
    const missing = storeAnswering(() => ({ status: 404 }));
    expect(await missing.store.sizeOf('files/missing')).toBeUndefined();
  });
});
