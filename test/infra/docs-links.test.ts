import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPOSITORY_ROOT } from '../../infra/declarations/repository.js';
import { anchorsOf, githubSlug, linksOf } from '../support/markdown-links.js';

/**
 * The documents a reader follows (README.md and docs/*.md) link only to what
 * exists: every in-repository link names a file of the repository (never one
 * beside it) and every anchor a heading of its document, by GitHub's rule; a
 * link out of the repository goes to a public https site, never to a local
 * address or plain http.
 */
const documents = [
  'README.md',
  ...readdirSync(join(REPOSITORY_ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];
const text = (path: string) => readFileSync(join(REPOSITORY_ROOT, path), 'utf8');
const LINE_ANCHOR = /^L\d+(-L\d+)?$/;
const PRIVATE_HOST = /^(localhost|.*\.(local|localhost|internal|test|example|invalid)|\d+(\.\d+){3}|\[.*\])$/i;

function publicHttpsProblem(target: string): string | undefined {
  if (/^www\./i.test(target)) return 'a bare www. address (write https://)';
  const url = new URL(target);
  if (url.protocol !== 'https:') return `${url.protocol} is not https`;
  if (PRIVATE_HOST.test(url.hostname) || !url.hostname.includes('.')) return `${url.hostname} is not a public site`;
  return undefined;
}

function inRepositoryProblem(document: string, target: string): string | undefined {
  const [path = '', anchor] = target.split('#', 2);
  const file = path === '' ? join(REPOSITORY_ROOT, document) : resolve(REPOSITORY_ROOT, dirname(document), decodeURIComponent(path));
  const inside = relative(REPOSITORY_ROOT, file);
  if (inside.startsWith('..') || resolve(file) === resolve(REPOSITORY_ROOT, '..')) return 'leaves the repository';
  if (!existsSync(file)) return `${inside} does not exist`;
  if (anchor === undefined) return undefined;
  if (!file.endsWith('.md') || statSync(file).isDirectory())
    return LINE_ANCHOR.test(anchor) ? undefined : `#${anchor}: ${inside} has no headings`;
  return anchorsOf(readFileSync(file, 'utf8')).has(decodeURIComponent(anchor)) ? undefined : `#${anchor}: no such heading in ${inside}`;
}

function problemOf(document: string, target: string): string | undefined {
  if (/^(https?:|www\.)/i.test(target)) return publicHttpsProblem(target);
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return 'a link that is neither https nor in the repository';
  return inRepositoryProblem(document, target);
}

describe('documentation links', () => {
  it.each(documents)('%s: every link resolves in the repository or goes to a public https site', (document) => {
    const broken = linksOf(text(document)).flatMap(({ target, line }) => {
      const problem = problemOf(document, target);
      return problem ? [`${document}:${line} ${target}: ${problem}`] : [];
    });
    expect(broken).toEqual([]);
  });

  it('finds links, bare URLs and anchors as GitHub renders them, not inside code', () => {
    const sample = [
      '# Deploying to AWS',
      '## What differs between `npm start` and AWS',
      '### POST /v1/attachments',
      '## Events (issue 20)',
      '## Events (issue 20)',
      'See [this](other.md#x "title"), <https://a.example.org/b> and https://aws.amazon.com/s3/.',
      'Not `[code](skipped.md)`, nor http://127.0.0.1:3000 in `http://127.0.0.1:3000`.',
      '```',
      '[fenced](skipped.md) http://localhost',
      '```',
      '[ref]: ../outside.md',
    ].join('\n');
    expect([...anchorsOf(sample)]).toEqual([
      'deploying-to-aws',
      'what-differs-between-npm-start-and-aws',
      'post-v1attachments',
      'events-issue-20',
      'events-issue-20-1',
    ]);
    expect(linksOf(sample).map(({ target }) => target)).toEqual([
      'other.md#x',
      'https://a.example.org/b',
      'https://aws.amazon.com/s3/',
      'http://127.0.0.1:3000',
      '../outside.md',
    ]);
    expect(githubSlug("Who reads a group's events")).toBe('who-reads-a-groups-events');
    expect(githubSlug('file_url lifetime')).toBe('file_url-lifetime');
  });

  it('refuses links that leave the repository, local addresses and plain http', () => {
    expect(problemOf('docs/api.md', '../../shared/API.md')).toMatch(/leaves the repository/);
    expect(problemOf('docs/api.md', 'http://127.0.0.1:3000')).toMatch(/not https/);
    expect(problemOf('docs/api.md', 'https://localhost:3000/v1')).toMatch(/not a public site/);
    expect(problemOf('docs/api.md', 'file:///etc/passwd')).toMatch(/neither https nor in the repository/);
    expect(problemOf('docs/api.md', 'nowhere.md')).toMatch(/does not exist/);
    expect(problemOf('docs/api.md', '#no-such-heading')).toMatch(/no such heading/);
    expect(problemOf('docs/api.md', '#errors')).toBeUndefined();
    expect(problemOf('README.md', 'docs/api.md#errors')).toBeUndefined();
  });
});
