/**
 * Dead links in markdown: every relative link's file must exist and every
 * `#anchor` must name a heading of the page it points to, as GitHub renders
 * it. External links (http, https, mailto) are not fetched: tests run
 * without the internet. Links inside code (fenced blocks and `code spans`)
 * and HTML comments are not links.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/** A link whose target is missing: where it is, what it points to, and why it is dead. */
export interface DeadLink {
  readonly file: string;
  readonly line: number;
  readonly target: string;
  readonly reason: string;
}

const FENCE = /^\s{0,3}(`{3,}|~{3,})/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/;
const INLINE_LINK = /\]\(\s*<?([^)\s>]*)>?(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g;
const REFERENCE_DEFINITION = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$/;
const EXTERNAL = /^[a-z][a-z0-9+.-]*:/i;

/** The lines a reader sees as prose: fenced code blocks and HTML comments blanked, so line numbers stay. */
function proseLines(markdown: string): string[] {
  let fence: string | undefined;
  let inComment = false;
  return markdown.split('\n').map((line) => {
    const opener = FENCE.exec(line);
    if (fence !== undefined) {
      if (opener && opener[1][0] === fence[0] && opener[1].length >= fence.length) fence = undefined;
      return '';
    }
    if (opener) {
      fence = opener[1];
      return '';
    }
    let text = line;
    if (inComment) {
      const end = text.indexOf('-->');
      if (end < 0) return '';
      text = text.slice(end + 3);
      inComment = false;
    }
    text = text.replace(/<!--.*?-->/g, '');
    const start = text.indexOf('<!--');
    if (start >= 0) {
      text = text.slice(0, start);
      inComment = true;
    }
    return text;
  });
}

/** A line without its code spans (`a](b)` in code is not a link). */
function withoutCodeSpans(line: string): string {
  return line.replace(/(`+)[\s\S]*?\1/g, '');
}

/**
 * GitHub's anchor for a heading: the rendered text lowercased, everything but
 * letters, marks, numbers, connector punctuation (`_`), spaces and hyphens
 * dropped, spaces turned into hyphens.
 */
export function githubSlug(heading: string): string {
  const rendered = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link renders as its text
    .replace(/`([^`]*)`/g, '$1') // code renders as its text
    .replace(/<[^>]+>/g, ''); // inline HTML tags render as nothing
  return rendered.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** Every anchor a page offers: its headings' slugs, a repeated one with -1, -2, ... as GitHub numbers them. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(markdown)) {
    const heading = HEADING.exec(line);
    if (!heading) continue;
    const slug = githubSlug(heading[2]);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** Every link target in a page, with its line number: inline links and images, and reference definitions. */
export function linkTargets(markdown: string): { line: number; target: string }[] {
  const targets: { line: number; target: string }[] = [];
  proseLines(markdown).forEach((text, index) => {
    const line = withoutCodeSpans(text);
    const definition = REFERENCE_DEFINITION.exec(line);
    if (definition) targets.push({ line: index + 1, target: definition[1] });
    for (const match of line.matchAll(INLINE_LINK)) targets.push({ line: index + 1, target: match[1] });
  });
  return targets;
}

/**
 * The dead links of one markdown file (`file`, relative to `root`). A link's
 * path is relative to the file's folder; an empty path is the file itself.
 */
export function deadLinks(root: string, file: string): DeadLink[] {
  const dead: DeadLink[] = [];
  const anchorsOf = new Map<string, Set<string>>();
  const anchors = (path: string): Set<string> => {
    let found = anchorsOf.get(path);
    if (!found) anchorsOf.set(path, (found = headingAnchors(readFileSync(join(root, path), 'utf8'))));
    return found;
  };
  for (const { line, target } of linkTargets(readFileSync(join(root, file), 'utf8'))) {
    if (target === '' || EXTERNAL.test(target)) continue;
    const hash = target.indexOf('#');
    const pathPart = decodeURI(hash < 0 ? target : target.slice(0, hash));
    const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
    const path = pathPart === '' ? file : relative(root, join(root, dirname(file), pathPart));
    if (path.startsWith('..') || !existsSync(join(root, path))) {
      dead.push({ file, line, target, reason: `${path} does not exist` });
      continue;
    }
    if (anchor === undefined || anchor === '') continue;
    if (statSync(join(root, path)).isDirectory() || !path.endsWith('.md')) {
      dead.push({ file, line, target, reason: `#${anchor} points into ${path}, which has no headings` });
    } else if (!anchors(path).has(anchor)) {
      dead.push({ file, line, target, reason: `${path} has no heading whose anchor is #${anchor}` });
    }
  }
  return dead;
}
