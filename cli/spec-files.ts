import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Problem } from '../api/problem.js';

/**
 * What one run read: every spec file, and every directory named on the
 * command line. `dkv synth` prunes only manifests whose spec file lies
 * within these, so a run over one file never removes another file's clusters.
 */
export interface SpecInputs {
  readonly files: readonly string[];
  readonly directories: readonly string[];
}

/** Every `.yaml`/`.yml` file under the given files and directories, in a stable order. */
export function specFiles(paths: readonly string[]): SpecInputs & { problems: Problem[] } {
  const files: string[] = [];
  const directories: string[] = [];
  const problems: Problem[] = [];
  const walk = (path: string, explicit: boolean): void => {
    let stat;
    try {
      stat = statSync(path);
    } catch (e) {
      problems.push({ file: path, path: '', message: `cannot read: ${(e as NodeJS.ErrnoException).code ?? String(e)}` });
      return;
    }
    if (stat.isDirectory()) {
      if (explicit) directories.push(path);
      for (const entry of readdirSync(path).sort()) walk(join(path, entry), false);
    } else if (explicit || /\.ya?ml$/.test(path)) {
      files.push(path);
    }
  };
  for (const path of paths) walk(path, true);
  return { files, directories, problems };
}
