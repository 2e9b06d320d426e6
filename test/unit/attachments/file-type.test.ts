import { lookup, types } from 'mime-types';
import { describe, expect, it } from 'vitest';
import { fileTypeOf } from '../../../shared/attachments/file-type.js';

describe('fileTypeOf', () => {
  it("keeps the part's specific type, in lower case and without parameters", () => {
    expect(fileTypeOf('image/png', 'x.jpg')).toBe('image/png');
    expect(fileTypeOf('Text/CSV; charset=utf-8', 'x')).toBe('text/csv');
    expect(fileTypeOf('application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'x')).toBe(
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    );
  });

  it('falls back to the extension for a generic, wildcard or invalid part type', () => {
    for (const declared of [
      'application/octet-stream',
      'binary/octet-stream',
      '*/*',
      'image/*',
      'nonsense',
      'foo/bar',
      'text/pl ain',
      '',
      undefined,
    ]) {
      expect(fileTypeOf(declared, 'photo.JPG')).toBe('image/jpeg');
    }
  });

  it('is application/octet-stream when neither tells', () => {
    expect(fileTypeOf('application/octet-stream', 'data.nosuchext')).toBe('application/octet-stream');
    expect(fileTypeOf(undefined, 'README')).toBe('application/octet-stream');
  });

  it('does not read a bare name as an extension', () => {
    expect(fileTypeOf(undefined, 'json')).toBe('application/octet-stream');
    expect(fileTypeOf(undefined, '.png')).toBe('application/octet-stream');
  });
});

describe('the extension table', () => {
  /**
   * Where mime-db lists an extension under application/octet-stream as well as
   * under a specific type, the mime package keeps application/octet-stream;
   * mime-types (our table before) chose the specific one.
   */
  const GENERIC_IN_MIME_DB = new Set(['exe', 'dll', 'deb', 'dmg', 'iso', 'msi']);

  // mime-types' table: every extension of mime-db.
  const extensionsOfMimeDb = Object.keys(types);

  it('maps every extension mime-db knows (1,200+) as mime-types did', () => {
    expect(extensionsOfMimeDb.length).toBeGreaterThan(1_200);
    const changed = extensionsOfMimeDb.filter((extension) => fileTypeOf(undefined, `file.${extension}`) !== lookup(extension));
    expect(new Set(changed)).toEqual(GENERIC_IN_MIME_DB);
    for (const extension of GENERIC_IN_MIME_DB) {
      expect(fileTypeOf(undefined, `setup.${extension}`)).toBe('application/octet-stream');
    }
  });

  it('maps the extensions the README names', () => {
    const documented: Record<string, string> = {
      'report.pdf': 'application/pdf',
      'photo.jpg': 'image/jpeg',
      'photo.JPEG': 'image/jpeg',
      'Été 🌞.jpg': 'image/jpeg',
      'image.png': 'image/png',
      'anim.gif': 'image/gif',
      'pic.webp': 'image/webp',
      'pic.heic': 'image/heic',
      'notes.txt': 'text/plain',
      'table.csv': 'text/csv',
      'page.html': 'text/html',
      'data.json': 'application/json',
      'letter.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      'sheet.xlsx': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
      'slides.pptx': 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
      'archive.zip': 'application/zip',
      'song.mp3': 'audio/mpeg',
      'clip.mp4': 'video/mp4',
      'voice.m4a': 'audio/mp4',
    };
    for (const [filename, type] of Object.entries(documented)) expect(fileTypeOf(undefined, filename), filename).toBe(type);
  });
});
