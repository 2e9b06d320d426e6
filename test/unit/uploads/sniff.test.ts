import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SNIFF_BYTES, sniffFileType } from '../../../shared/uploads/sniff.js';

const hex = (text: string) => Uint8Array.from(Buffer.from(text, 'hex'));

describe('sniffFileType', () => {
  it.each([
    ['89504e470d0a1a0a0000000d49484452000000100000001008060000001ff3ff610010000049444154', 'image/png'],
    ['ffd8ffe000104a46494600010100000100010000', 'image/jpeg'],
    ['255044462d312e370a', 'application/pdf'],
    ['000000186674797069736d0000000069736f6d', 'video/mp4'],
  ])('reads %s as %s', async (bytes, type) => {
    expect(await sniffFileType(hex(bytes))).toBe(type);
  });

  it('leaves text to the declared type', async () => {
    expect(await sniffFileType(new TextEncoder().encode('name,size\nholiday.jpg,48213\n'))).toBeUndefined();
  });

  it('answers a type or nothing for any first bytes, never an error', async () => {
    await fc.assert(
      // Random bytes, and random bytes behind a known magic number (where the format parsers dig deeper).
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ maxLength: SNIFF_BYTES }),
          fc
            .tuple(
              fc.constantFrom('89504e470d0a1a0a', 'ffd8ff', '504b0304', '1a45dfa3', '000000186674797069736d', '52494646', '4f676753'),
              fc.uint8Array({ maxLength: 512 }),
            )
            .map(([magic, tail]) => Uint8Array.from([...hex(magic), ...tail])),
        ),
        async (bytes) => {
          const type = await sniffFileType(bytes);
          expect(type === undefined || /^[a-z0-9.+-]+\/[a-z0-9.+-]+$/.test(type)).toBe(true);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
