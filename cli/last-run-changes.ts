import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Problem } from '../api/problem.js';
import { manifestFileName } from './render.js';
import type { SpecDocument } from './read-specs.js';

/**
 * What `dkv synth` may not change in a running cluster, judged against the
 * manifest it wrote last time, which is what a GitOps tool applied and so
 * what runs (`dkv synth` has no live cluster to read). For each spec whose
 * manifest says one thing now (`read` of the rendered file) and another in
 * the file already in `outDir`, `problem` words the refusal; a new file, or
 * a manifest that says nothing either way, is no change. The peer scheme
 * (peer-scheme-guard.ts) and the certificate provider (tls-provider-guard.ts)
 * are judged this way.
 */
export function changesFromLastRun<T extends string>(
  specs: readonly SpecDocument[], rendered: ReadonlyMap<string, string>, outDir: string,
  read: (manifest: string | undefined) => T | undefined,
  problem: (spec: SpecDocument, path: string, running: T, next: T) => Problem,
): Problem[] {
  const problems: Problem[] = [];
  for (const spec of specs) {
    const name = manifestFileName(spec);
    const path = join(outDir, name);
    const next = read(rendered.get(name));
    if (!next || !existsSync(path)) continue;
    const running = read(readFileSync(path, 'utf8'));
    if (running && running !== next) problems.push(problem(spec, path, running, next));
  }
  return problems;
}
