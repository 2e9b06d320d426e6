import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { isPreviewedImage } from '../../../shared/previews/sniff.js';
import { SVG } from '../../support/images.js';

/** Whether an upload's record starts pending: by the file's first bytes alone, as sharp writes each previewed format. */
describe('isPreviewedImage', () => {
  const pixels = () => sharp({ create: { width: 8, height: 8, channels: 3, background: '#888' } });

  it.each([
    ['JPEG', () => pixels().jpeg().toBuffer()],
    ['PNG', () => pixels().png().toBuffer()],
    ['WebP', () => pixels().webp().toBuffer()],
    ['GIF', () => pixels().gif().toBuffer()],
    ['AVIF', () => pixels().avif().toBuffer()],
    ['TIFF', () => pixels().tiff().toBuffer()],
  ])('knows %s by its bytes', async (_, make) => {
    expect(isPreviewedImage(await make())).toBe(true);
  });

  it.each([
    ['SVG', SVG],
    ['text', Buffer.from('hello, world')],
    ['a PDF', Buffer.from('%PDF-1.7\n')],
    ['a RIFF that is not WebP (WAV)', Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WAVEfmt ')])],
    ['an MP4 (ftyp without an AVIF brand)', Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom\0\0\0\0isommp41')])],
    ['nothing', Buffer.alloc(0)],
    ['two bytes of a JPEG', Buffer.from([0xff, 0xd8])],
  ])('does not take %s for an image', (_, bytes) => {
    expect(isPreviewedImage(bytes)).toBe(false);
  });
});
