/**
 * The README and the pages in docs/ link to each other and into the tree;
 * a page moved, renamed or re-headed must not leave a link that leads
 * nowhere. CI runs this with every test, so a dead link fails the build.
 * The README stays a page a newcomer reads to the end: under 250 lines.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deadLinks, githubSlug, headingAnchors, linkTargets } from '../support/markdown-links.js';
import { ROOT } from './support.js';

/** Every .md file under a folder of the repository, repository-relative. */
function markdownUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(join(ROOT, path)).isDirectory()) return markdownUnder(path);
    return path.endsWith('.md') ? [path] : [];
  });
}

const PAGES = ['README.md', 'CHANGELOG.md', 'deploy/README.md', 'test/cluster/README.md', ...markdownUnder('docs')];

describe('links between the documentation pages', () => {
  it.each(PAGES)('%s has no dead link', (page) => {
    expect(deadLinks(ROOT, page).map((d) => `${d.file}:${d.line}: ${d.target}: ${d.reason}`)).toEqual([]);
  });

  it('reads the pages a reader is sent to from the README', () => {
    const targets = linkTargets(readFileSync(join(ROOT, 'README.md'), 'utf8')).map((t) => t.target.split('#')[0]);
    for (const page of ['docs/operating.md', 'docs/installing.md', 'docs/design.md', 'docs/performance.md', 'docs/spec-reference.md', 'CHANGELOG.md']) {
      expect(targets).toContain(page);
      expect(PAGES).toContain(page);
    }
  });

  it('keeps the README under 250 lines', () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length;
    expect(lines).toBeLessThan(250);
  });
});

describe('the link checker', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'dkv-docs-links-'));
    mkdirSync(join(dir, 'docs'));
    writeFileSync(join(dir, 'docs', 'guide.md'), [
      '# Guide',
      '## Day-2: how it changes `size`',
      '## Notes',
      '## Notes',
      '```sh',
      '# not a heading',
      '```',
    ].join('\n'));
    writeFileSync(join(dir, 'README.md'), [
      '# Readme',
      '[guide](docs/guide.md) and [its Day-2](docs/guide.md#day-2-how-it-changes-size)',
      'and [the second notes](docs/guide.md#notes-1), [here](#readme), [out](https://example.com/gone#x)',
      '[gone](docs/missing.md) and [no such heading](docs/guide.md#day-3)',
      '`[in code](nowhere.md)` is not a link, nor is the fenced one below:',
      '```',
      '[fenced](nowhere.md)',
      '```',
      '<!-- [commented](nowhere.md) -->',
      '[not-a-heading](docs/guide.md#not-a-heading)',
      '[a third notes](docs/guide.md#notes-2)',
      '[ref]: docs/also-missing.md',
    ].join('\n'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('finds a link to a missing file, a missing heading, and a missing duplicate, and nothing else', () => {
    expect(deadLinks(dir, 'README.md').map((d) => [d.line, d.target])).toEqual([
      [4, 'docs/missing.md'],
      [4, 'docs/guide.md#day-3'],
      [10, 'docs/guide.md#not-a-heading'],
      [11, 'docs/guide.md#notes-2'],
      [12, 'docs/also-missing.md'],
    ]);
  });

  it('names anchors as GitHub does', () => {
    expect(githubSlug('Day-2: how the controller changes a running etcd cluster')).toBe('day-2-how-the-controller-changes-a-running-etcd-cluster');
    expect(githubSlug('See it work: `npm run demo`')).toBe('see-it-work-npm-run-demo');
    expect(githubSlug('Across Kubernetes clusters: one writer (fleet mode)')).toBe('across-kubernetes-clusters-one-writer-fleet-mode');
    expect(githubSlug('snake_case and [a link](x.md)')).toBe('snake_case-and-a-link');
    expect([...headingAnchors('# A\n## A\n## A!')]).toEqual(['a', 'a-1', 'a-2']);
  });
});
