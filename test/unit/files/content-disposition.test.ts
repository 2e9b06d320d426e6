import { describe, expect, it } from 'vitest';
import { attachmentDisposition } from '../../../shared/files/content-disposition.js';

describe('attachmentDisposition', () => {
  it('always gives a quoted ASCII filename and the exact name in filename*', () => {
    expect(attachmentDisposition('photo.png')).toBe(`attachment; filename="photo.png"; filename*=UTF-8''photo.png`);
    expect(attachmentDisposition('Été "x".txt')).toBe(`attachment; filename="Ete _x_.txt"; filename*=UTF-8''%C3%89t%C3%A9%20%22x%22.txt`);
  });

  it('escapes the characters encodeURIComponent leaves but RFC 8187 does not allow', () => {
    expect(attachmentDisposition("it's (a)*.txt")).toContain(`filename*=UTF-8''it%27s%20%28a%29%2A.txt`);
  });
});
