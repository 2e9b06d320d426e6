import { describe, expect, it } from 'vitest';
import { asciiFallback, normalizeFilename } from '../../../shared/files/filename.js';

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

describe('normalizeFilename', () => {
  it('keeps only the base name, for / and \\ separators alike', () => {
    expect(normalizeFilename('../../etc/passwd')).toBe('passwd');
    expect(normalizeFilename('C:\\Users\\me\\photo.jpg')).toBe('photo.jpg');
    expect(normalizeFilename('/abs/dir/')).toBe('file');
  });

  it('removes control characters and bidirectional overrides', () => {
    expect(normalizeFilename('a\r\nb\u0000c\u007f\u0085.txt')).toBe('abc.txt');
    expect(normalizeFilename('invoice\u202Efdp.exe')).toBe('invoicefdp.exe');
    expect(normalizeFilename('\u2066x\u2069.txt')).toBe('x.txt');
  });

  it('keeps Unicode in NFC', () => {
    expect(normalizeFilename('re\u0301sume\u0301.pdf')).toBe('r\u00e9sum\u00e9.pdf');
    expect(normalizeFilename('🎉 party 日本.png')).toBe('🎉 party 日本.png');
    expect(normalizeFilename('say "hi".txt')).toBe('say "hi".txt');
  });

  it('is "file" when nothing is left', () => {
    for (const raw of ['', '   ', '.', '..', '../..', '\u202E\u0007']) expect(normalizeFilename(raw)).toBe('file');
  });

  it('cuts to 255 UTF-8 bytes keeping the extension', () => {
    const name = normalizeFilename(`${'a'.repeat(300)}.jpeg`);
    expect(bytes(name)).toBe(255);
    expect(name.endsWith('.jpeg')).toBe(true);
  });

  it('never splits a character, an emoji or a letter from its accent when cutting', () => {
    const emoji = normalizeFilename(`${'👩‍👩‍👧'.repeat(20)}.txt`);
    expect(bytes(emoji)).toBeLessThanOrEqual(255);
    expect(emoji).toMatch(/^(👩‍👩‍👧)+\.txt$/u);
    // q + U+0303 has no precomposed form, so NFC keeps two code points that must stay together.
    const accents = normalizeFilename(`${'q\u0303'.repeat(100)}.md`);
    expect(accents).toMatch(/^(q\u0303)+\.md$/u);
    expect(bytes(accents)).toBeLessThanOrEqual(255);
  });

  it('cuts a name whose "extension" is too long to be one as a whole', () => {
    const name = normalizeFilename(`report.${'x'.repeat(300)}`);
    expect(bytes(name)).toBe(255);
    expect(name.startsWith('report.xxx')).toBe(true);
  });

  it('leaves a name of exactly 255 bytes alone', () => {
    const exact = `${'b'.repeat(251)}.txt`;
    expect(normalizeFilename(exact)).toBe(exact);
  });
});

describe('asciiFallback', () => {
  it('drops accents and replaces what is not printable ASCII', () => {
    expect(asciiFallback('Résumé 📄.pdf')).toBe('Resume _.pdf');
    expect(asciiFallback('日本.txt')).toBe('__.txt');
  });

  it('replaces the characters clients unescape or mangle', () => {
    expect(asciiFallback('say "hi" 100%\\.txt')).toBe('say _hi_ 100__.txt');
  });

  it('is the name itself for plain ASCII', () => {
    expect(asciiFallback('report-2024 (final).pdf')).toBe('report-2024 (final).pdf');
  });
});
