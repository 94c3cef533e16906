import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { staleManifests } from './prune.js';
import type { SpecInputs } from './read-specs.js';

/**
 * Writes one file through a temporary file and a rename, so no reader (or
 * crash) sees it half-written. The temporary file is created exclusively
 * (O_CREAT | O_EXCL) under a random name: a file or symlink already at that
 * path (planted by another user of a shared directory, say) makes the write
 * fail instead of being written through. The rename replaces whatever is at
 * the target, a symlink included, without following it.
 * `suffix` exists so a test can know the temporary name.
 */
export function writeFileAtomically(dir: string, name: string, content: string, suffix: string = randomBytes(8).toString('hex')): void {
  const temporary = join(dir, `.${name}.${suffix}.tmp`);
  const fd = openSync(temporary, 'wx', 0o644);
  try {
    try {
      writeFileSync(fd, content); // loops until every byte is written
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, join(dir, name));
  } catch (e) {
    rmSync(temporary, { force: true });
    throw e;
  }
}

/**
 * Writes the rendered files into `outDir`, then removes the manifests an
 * earlier run wrote for clusters that the spec files read by this run
 * (`inputs`) no longer hold, so a GitOps repository that commits the
 * directory deletes them too. Everything else in the directory is left
 * alone: see staleManifests.
 */
export function writeManifests(outDir: string, files: ReadonlyMap<string, string>, inputs: SpecInputs): { written: number; removed: string[] } {
  mkdirSync(outDir, { recursive: true });
  for (const [name, content] of files) writeFileAtomically(outDir, name, content);
  const removed = staleManifests(outDir, new Set(files.keys()), inputs);
  for (const name of removed) rmSync(join(outDir, name));
  return { written: files.size, removed };
}
