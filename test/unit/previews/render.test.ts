import sharp from 'sharp';
import { thumbHashToRGBA } from 'thumbhash';
import { describe, expect, it } from 'vitest';
import { renderPreview, renditionEdges, Undecodable } from '../../../shared/previews/render.js';
import { animatedGif, pngBombHeader, rotatedPhotoWithGps, SVG, truncatedJpeg } from '../../support/images.js';

describe('renditionEdges', () => {
  it('is min(320, L) and, when L > 320, min(1024, L): never larger than the original', () => {
    expect(renditionEdges(1)).toEqual([1]);
    expect(renditionEdges(320)).toEqual([320]);
    expect(renditionEdges(321)).toEqual([320, 321]);
    expect(renditionEdges(1024)).toEqual([320, 1024]);
    expect(renditionEdges(40_000)).toEqual([320, 1024]);
  });
});

describe('renderPreview', () => {
  it('applies EXIF orientation, strips every piece of metadata, and makes a decodable ThumbHash of at most 40 base64 characters', async () => {
    const rendered = await renderPreview(await rotatedPhotoWithGps(1200, 800));
    expect([rendered.width, rendered.height]).toEqual([800, 1200]);
    expect(rendered.thumbnails.map(({ width, height }) => [width, height])).toEqual([
      [213, 320],
      [683, 1024],
    ]);
    for (const { bytes } of rendered.thumbnails) {
      const metadata = await sharp(bytes).metadata();
      expect(metadata.format).toBe('webp');
      expect([metadata.exif, metadata.xmp, metadata.icc, metadata.orientation]).toEqual([undefined, undefined, undefined, undefined]);
    }
    expect(rendered.placeholder.length).toBeLessThanOrEqual(40);
    const decoded = thumbHashToRGBA(Buffer.from(rendered.placeholder, 'base64'));
    // Portrait, as displayed.
    expect(decoded.h).toBeGreaterThan(decoded.w);
  });

  it('takes the first frame of an animation', async () => {
    const rendered = await renderPreview(await animatedGif(60, 40));
    expect([rendered.width, rendered.height]).toEqual([60, 40]);
    const [thumbnail] = rendered.thumbnails;
    expect([thumbnail!.width, thumbnail!.height]).toEqual([60, 40]);
    // Its last row too is the first frame's red, not the second frame's blue below it.
    const { data, info } = await sharp(thumbnail!.bytes).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    const lastRow = (info.height - 1) * info.width * info.channels;
    expect([data[lastRow]! > 200, data[lastRow + 2]! < 60]).toEqual([true, true]);
  });

  it.each([
    ['a truncated JPEG', truncatedJpeg, /premature end|truncated/i],
    ['a header claiming 400 megapixels', async () => pngBombHeader(), /pixel limit/],
    ['an SVG', async () => SVG, /svg is not a previewed format/],
    ['noise', async () => Buffer.from('not an image'), /unsupported image format/],
  ])('refuses %s as the file’s failure (Undecodable)', async (_, make, message) => {
    const failure = await renderPreview(await make()).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Undecodable);
    expect((failure as Error).message).toMatch(message);
  });
});
