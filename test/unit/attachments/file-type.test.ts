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
    for (const declared of ['application/octet-stream', 'binary/octet-stream', '*/*', 'image/*', 'nonsense', 'foo/bar', 'text/pl ain', '', undefined]) {
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
