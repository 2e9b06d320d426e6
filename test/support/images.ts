import { deflateSync } from 'node:zlib';
import sharp from 'sharp';

/**
 * Images the preview tests upload, made here by sharp (libvips) rather than
 * checked in: each one the case it stands for, and nothing else.
 */

/** A photo as a phone takes it: pixels stored landscape with EXIF orientation 6 (shown portrait), a GPS position and a comment. */
export function rotatedPhotoWithGps(width = 1200, height = 800): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: '#3a7bd5' } })
    .jpeg()
    .withMetadata({ orientation: 6 })
    .withExif({
      IFD0: { ImageDescription: 'taken at home' },
      IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '48/1 51/1 24/1', GPSLongitudeRef: 'E', GPSLongitude: '2/1 21/1 3/1' },
    })
    .toBuffer();
}

export function png(width: number, height: number, background = '#20a060'): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 4, background } })
    .png()
    .toBuffer();
}

/** A plain JPEG of that many pixels (a 12-megapixel photo is 4000 × 3000). */
export function jpeg(width: number, height: number): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
    .jpeg({ quality: 85 })
    .toBuffer();
}

/** Two frames: the first all red, the second all blue. */
export function animatedGif(width = 60, height = 40): Promise<Buffer> {
  const frame = (rgb: [number, number, number]) => Buffer.alloc(width * height * 3).map((_, index) => rgb[index % 3]!);
  return sharp(Buffer.concat([frame([255, 0, 0]), frame([0, 0, 255])]), {
    raw: { width, height: height * 2, channels: 3, pageHeight: height },
  } as never)
    .gif({ loop: 0, delay: [100, 100] })
    .toBuffer();
}

/** The first half of a JPEG: its header promises pixels that never come. */
export async function truncatedJpeg(): Promise<Buffer> {
  const whole = await jpeg(800, 600);
  return whole.subarray(0, Math.floor(whole.length / 2));
}

/**
 * A decompression bomb's header: a PNG that says it is 20,000 × 20,000
 * (400 megapixels) and holds a few bytes of data. Decoding it would fill
 * gigabytes; it must be refused from its header.
 */
export function pngBombHeader(width = 20_000, height = 20_000): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(Buffer.alloc(1024))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

export const SVG = Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" width="640" height="480"><rect width="640" height="480" fill="red"/></svg>',
);

function crc32(bytes: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit += 1) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return (crc ^ 0xffffffff) >>> 0;
}
