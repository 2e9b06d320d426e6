import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { completionBody, partsPageOf, readXml, uploadIdOf } from '../../../shared/s3/xml.js';

/**
 * The answers are shaped as the examples of S3's API reference
 * (CreateMultipartUpload, ListParts), with their namespaces, owners and
 * whitespace, so the parser reads what S3 sends and not a tidied copy.
 */
const INITIATED = `<?xml version="1.0" encoding="UTF-8"?>
<InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Bucket>amzn-s3-demo-bucket</Bucket>
  <Key>example-object</Key>
  <UploadId>VXBsb2FkIElEIGZvciA2aWWpbmcncyBteSBtb3ZpZS5tMnRzIHVwbG9hZA</UploadId>
</InitiateMultipartUploadResult>`;

const TRUNCATED_PAGE = `<?xml version="1.0" encoding="UTF-8"?>
<ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Bucket>amzn-s3-demo-bucket</Bucket>
  <Key>example-object</Key>
  <UploadId>XXBsb2FkIElEIGZvciBlbHZpbmcncyVcdS1tb3ZpZS5tMnRzEEEwbG9hZA</UploadId>
  <Initiator>
    <ID>arn:aws:iam::111122223333:user/some-user-11116a31-17b5-4fb7-9df5-b288870f11xx</ID>
    <DisplayName>umat-user-11116a31-17b5-4fb7-9df5-b288870f11xx</DisplayName>
  </Initiator>
  <Owner>
    <ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a</ID>
    <DisplayName>someName</DisplayName>
  </Owner>
  <StorageClass>STANDARD</StorageClass>
  <PartNumberMarker>1</PartNumberMarker>
  <NextPartNumberMarker>3</NextPartNumberMarker>
  <MaxParts>2</MaxParts>
  <IsTruncated>true</IsTruncated>
  <Part>
    <PartNumber>2</PartNumber>
    <LastModified>2010-11-10T20:48:34.000Z</LastModified>
    <ETag>"7778aef83f66abc1fa1e8477f296d394"</ETag>
    <Size>10485760</Size>
  </Part>
  <Part>
    <PartNumber>3</PartNumber>
    <LastModified>2010-11-10T20:48:33.000Z</LastModified>
    <ETag>&quot;aaaa18db4cc2f85cedef654fccc4a4x8&quot;</ETag>
    <Size>10485760</Size>
  </Part>
</ListPartsResult>`;

const LAST_PAGE = `<?xml version="1.0" encoding="UTF-8"?>
<ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Bucket>amzn-s3-demo-bucket</Bucket>
  <Key>example-object</Key>
  <UploadId>XXBsb2FkIElEIGZvciBlbHZpbmcncyVcdS1tb3ZpZS5tMnRzEEEwbG9hZA</UploadId>
  <PartNumberMarker>3</PartNumberMarker>
  <NextPartNumberMarker>4</NextPartNumberMarker>
  <MaxParts>2</MaxParts>
  <IsTruncated>false</IsTruncated>
  <Part>
    <PartNumber>4</PartNumber>
    <LastModified>2010-11-10T20:48:35.000Z</LastModified>
    <ETag>"0ba0e4f1c2c4b9a8c3e1e0e1f2a3b4c5"</ETag>
    <Size>1024</Size>
  </Part>
</ListPartsResult>`;

const NO_PARTS = `<?xml version="1.0" encoding="UTF-8"?>
<ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>b</Bucket><Key>k</Key><UploadId>u</UploadId><PartNumberMarker>0</PartNumberMarker><NextPartNumberMarker>0</NextPartNumberMarker><MaxParts>1000</MaxParts><IsTruncated>false</IsTruncated></ListPartsResult>`;

describe("S3's XML answers", () => {
  it('reads the UploadId of a started multipart upload', () => {
    expect(uploadIdOf(INITIATED)).toBe('VXBsb2FkIElEIGZvciA2aWWpbmcncyBteSBtb3ZpZS5tMnRzIHVwbG9hZA');
  });

  it('refuses a start answer without an UploadId, and what is not XML', () => {
    expect(() => uploadIdOf('<InitiateMultipartUploadResult><Key>k</Key></InitiateMultipartUploadResult>')).toThrow(/without an UploadId/);
    expect(() => uploadIdOf('<html><body>Bad gateway')).toThrow();
    expect(() => readXml('')).toThrow();
  });

  it('reads a truncated ListParts page: every part with its quoted ETag, and where the next page starts', () => {
    expect(partsPageOf(TRUNCATED_PAGE)).toEqual({
      parts: [
        { partNumber: 2, size: 10_485_760, etag: '"7778aef83f66abc1fa1e8477f296d394"' },
        { partNumber: 3, size: 10_485_760, etag: '"aaaa18db4cc2f85cedef654fccc4a4x8"' },
      ],
      nextMarker: '3',
    });
  });

  it('reads the last page (a single part, IsTruncated false) as the end, whatever NextPartNumberMarker says', () => {
    expect(partsPageOf(LAST_PAGE)).toEqual({
      parts: [{ partNumber: 4, size: 1024, etag: '"0ba0e4f1c2c4b9a8c3e1e0e1f2a3b4c5"' }],
      nextMarker: undefined,
    });
  });

  it('reads an upload without parts as an empty last page', () => {
    expect(partsPageOf(NO_PARTS)).toEqual({ parts: [], nextMarker: undefined });
  });

  it('writes a CompleteMultipartUpload body that reads back as the same parts, whatever the ETags hold', () => {
    const etags = fc.oneof(
      fc.stringMatching(/^"[0-9a-f]{32}(-[0-9]{1,5})?"$/),
      // Nothing S3 sends, but the body must stay well-formed for any text: quotes, <, &, Unicode.
      fc
        .string({ unit: 'grapheme', minLength: 1, maxLength: 40 })
        // biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters XML 1.0 cannot hold, left out of the ETags on purpose
        .filter((text) => !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\r]/.test(text) && text.trim() === text),
    );
    const parts = fc.array(fc.record({ partNumber: fc.integer({ min: 1, max: 10_000 }), etag: etags }), { minLength: 1, maxLength: 30 });
    fc.assert(
      fc.property(parts, (written) => {
        const { root, value } = readXml(completionBody(written));
        expect(root).toBe('CompleteMultipartUpload');
        const read = [(value as Record<string, unknown>).Part].flat() as { PartNumber: string; ETag: string }[];
        expect(read.map((part) => ({ partNumber: Number(part.PartNumber), etag: part.ETag }))).toEqual(written);
      }),
      { numRuns: 300 },
    );
  });
});
