/**
 * The links of a Markdown document as GitHub renders it: fenced code and code
 * spans hold no links, headings get GitHub's anchors (github-slugger's rule:
 * lower case, punctuation and symbols dropped, each space a hyphen, a repeated
 * anchor suffixed -1, -2…), and GitHub also links a bare URL in prose.
 */

export interface MarkdownLink {
  target: string;
  line: number;
}

const FENCE = /^\s{0,3}(`{3,}|~{3,})/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;

/** The document's lines outside fenced code blocks, with their 1-based numbers. */
function proseLines(markdown: string): { text: string; line: number }[] {
  const lines: { text: string; line: number }[] = [];
  let fence: string | undefined;
  markdown.split('\n').forEach((text, index) => {
    const opening = FENCE.exec(text)?.[1];
    if (fence) {
      if (opening && opening[0] === fence[0] && opening.length >= fence.length) fence = undefined;
    } else if (opening) fence = opening;
    else lines.push({ text, line: index + 1 });
  });
  return lines;
}

/** The text a heading renders to: code spans keep their content, links their text, emphasis goes. */
function renderedText(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/(\*\*|__|\*)/g, '');
}

export function githubSlug(heading: string): string {
  return renderedText(heading)
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text } of proseLines(markdown)) {
    const heading = HEADING.exec(text)?.[2];
    if (heading === undefined) continue;
    const slug = githubSlug(heading);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

const INLINE_LINK = /\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g;
const REFERENCE_DEFINITION = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/;
const AUTOLINK = /<([a-z][a-z0-9+.-]*:[^\s>]*)>/gi;
const BARE_URL = /(?<![\w/(<])(?:https?:\/\/|www\.)[^\s<>)\]]+/gi;

export function linksOf(markdown: string): MarkdownLink[] {
  const links: MarkdownLink[] = [];
  for (const { text, line } of proseLines(markdown)) {
    const prose = text.replace(/(`+)[\s\S]*?\1/g, ' ');
    const found = [
      ...[...prose.matchAll(INLINE_LINK)].map((match) => match[1] ?? ''),
      ...[REFERENCE_DEFINITION.exec(prose)?.[1]].filter((target) => target !== undefined),
      ...[...prose.matchAll(AUTOLINK)].map((match) => match[1] ?? ''),
      ...[...prose.replace(INLINE_LINK, ' ').replace(AUTOLINK, ' ').matchAll(BARE_URL)].map((match) => match[0]),
    ];
    for (const target of found) links.push({ target: target.replace(/[.,;:*_]+$/, ''), line });
  }
  return links;
}
