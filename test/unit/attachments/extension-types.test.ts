import mime from 'mime';
import { describe, expect, it } from 'vitest';
import { compressedExtensionTable, encodeExtensionTable, mimeExtensionTypes } from '../../../infra/ops/extension-table.js';
import { EXTENSION_TABLE } from '../../../shared/attachments/extension-table.js';
import { decodeExtensionTable, readExtensionTable, typeOfSuffix } from '../../../shared/attachments/extension-types.js';

describe('the compact extension table', () => {
  // After a mime upgrade, this fails until the table is written again: npx tsx infra/ops/extension-table.ts
  it("gives every extension the installed mime knows (1,200+) the type mime's getType() gives it", () => {
    const expected = mimeExtensionTypes();
    expect(expected.size).toBeGreaterThan(1_200);
    expect(readExtensionTable(EXTENSION_TABLE)).toEqual(expected);
    expect(readExtensionTable(compressedExtensionTable())).toEqual(expected);
    for (const [extension, type] of expected) expect(typeOfSuffix(`.${extension.toUpperCase()}`), extension).toBe(type);
  });

  it('reads a suffix as mime does: after the last path separator, none when only a separator follows the dot', () => {
    const suffixes = ['.png', '.PNG', '.tar.gz', '.b/c', '.b/c.png', '.b\\c.jpg', '.b/.png', '.', '.nosuchext', '.b/c.', '.x/y/z.json'];
    for (const suffix of suffixes) expect(typeOfSuffix(suffix) ?? null, suffix).toBe(mime.getType(suffix));
  });

  it('decodes what it encodes, types that share long prefixes included', () => {
    const types = new Map([
      ['docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
      ['dotx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.template'],
      ['xlsx', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'],
      ['a', 'a/b'],
      ['b', 'a/b'],
    ]);
    expect(decodeExtensionTable(encodeExtensionTable(types))).toEqual(types);
  });
});
