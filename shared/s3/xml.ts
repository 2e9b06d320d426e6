import { parseXML, XmlNode } from '@aws-sdk/xml-builder';

/**
 * S3's XML, read with the SDK's own parser (parseXML of @aws-sdk/xml-builder,
 * what the S3 client's protocol runs) and written with its own builder
 * (XmlNode, which escapes as the client does): the few answers the file
 * store reads and the one body it sends.
 */

/** An element's content as parseXML gives it: text, or child elements (an array when repeated). */
export type XmlValue = string | { [name: string]: XmlValue | XmlValue[] };

/** The root element's name and content; throws on what is not XML. */
export function readXml(text: string): { root: string; value: XmlValue } {
  const parsed = parseXML(text) as Record<string, XmlValue>;
  const [rootElement] = Object.entries(parsed);
  if (rootElement === undefined) throw new Error('S3 answered an XML document without a root element');
  const [root, value] = rootElement;
  return { root, value };
}

/** A child element's text ('' for an empty element), undefined when absent. */
export function childText(value: XmlValue | undefined, name: string): string | undefined {
  if (value === undefined || typeof value === 'string') return undefined;
  const child = value[name];
  const first = Array.isArray(child) ? child[0] : child;
  if (first === undefined) return undefined;
  return typeof first === 'string' ? first : typeof first['#text'] === 'string' ? first['#text'] : '';
}

/** Every child element of that name, in document order. */
function children(value: XmlValue, name: string): XmlValue[] {
  if (typeof value === 'string') return [];
  const child = value[name];
  return child === undefined ? [] : [child].flat();
}

/** CreateMultipartUpload's answer (InitiateMultipartUploadResult): the upload's id. */
export function uploadIdOf(text: string): string {
  const uploadId = childText(readXml(text).value, 'UploadId');
  if (!uploadId) throw new Error('S3 started a multipart upload without an UploadId');
  return uploadId;
}

export interface ListedPart {
  partNumber: number;
  size: number;
  etag: string;
}

export interface PartsPage {
  parts: ListedPart[];
  /** Where the next page starts (part-number-marker), when S3 says there is one. */
  nextMarker: string | undefined;
}

/** One page of ListParts' answer (ListPartsResult): up to 1,000 parts, and where the next page starts. */
export function partsPageOf(text: string): PartsPage {
  const { value } = readXml(text);
  const parts = children(value, 'Part').map((part) => ({
    partNumber: Number(childText(part, 'PartNumber') ?? 0),
    size: Number(childText(part, 'Size') ?? 0),
    etag: childText(part, 'ETag') ?? '',
  }));
  const truncated = childText(value, 'IsTruncated') === 'true';
  const marker = childText(value, 'NextPartNumberMarker');
  return { parts, nextMarker: truncated && marker ? marker : undefined };
}

/** CompleteMultipartUpload's body, as the S3 client serializes it. */
export function completionBody(parts: readonly { partNumber: number; etag: string }[]): string {
  const root = new XmlNode('CompleteMultipartUpload').addAttribute('xmlns', 'http://s3.amazonaws.com/doc/2006-03-01/');
  for (const part of parts) {
    root.addChildNode(
      new XmlNode('Part').addChildNode(XmlNode.of('ETag', part.etag)).addChildNode(XmlNode.of('PartNumber', String(part.partNumber))),
    );
  }
  return `<?xml version="1.0" encoding="UTF-8"?>${root.toString()}`;
}
