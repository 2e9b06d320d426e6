import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPOSITORY_ROOT } from '../../infra/declarations/repository.js';

/**
 * docs/ says each thing once (issue 36): its documents hold at most half of the
 * ~65,000 words they once had. Words are counted as `wc -w docs/*.md` counts
 * them: runs of characters between ASCII whitespace. README.md is not counted.
 */
const WORD_LIMIT = 32_500;
const DOCS = join(REPOSITORY_ROOT, 'docs');

const wordsOf = (text: string) => text.split(/[ \t\n\v\f\r]+/).filter((word) => word !== '').length;

describe('the documentation in docs/', () => {
  it(`holds at most ${WORD_LIMIT.toLocaleString('en')} words, as wc -w counts them`, () => {
    const counts = readdirSync(DOCS)
      .filter((name) => name.endsWith('.md'))
      .sort()
      .map((name) => ({ name, words: wordsOf(readFileSync(join(DOCS, name), 'utf8')) }));
    const total = counts.reduce((sum, { words }) => sum + words, 0);
    const table = counts.map(({ name, words }) => `${String(words).padStart(7)} docs/${name}`).join('\n');
    expect(total, `docs/ holds ${total} words, over ${WORD_LIMIT}:\n${table}`).toBeLessThanOrEqual(WORD_LIMIT);
  });

  it('counts words as wc -w does: whitespace-separated, punctuation and code included', () => {
    expect(wordsOf('')).toBe(0);
    expect(wordsOf('  \n\t ')).toBe(0);
    expect(wordsOf('`limit + 1` items,\tread — once.\n\n| a | b |')).toBe(12);
  });
});
