import { randomBytes } from 'node:crypto';
import { closeSync, openSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Writes one file through a temporary file and a rename, so no reader (or
 * crash) sees it half-written. The temporary file is created exclusively
 * (O_CREAT | O_EXCL) under a random name: a file or symlink already at that
 * path (planted by another user of a shared directory, say) makes the write
 * fail instead of being written through. The rename replaces whatever is at
 * the target, a symlink included, without following it.
 * `suffix` exists so a test can know the temporary name. By default it is
 * this process's random token and a counter: as unguessable to another user
 * as a fresh random name per file (O_EXCL is the guard either way), without
 * a getrandom call for each of a thousand manifests.
 */
export function writeFileAtomically(dir: string, name: string, content: string, suffix: string = temporarySuffix()): void {
  const temporary = join(dir, temporaryName(name, suffix));
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

let processToken: string | undefined;
let written = 0;

/** A temporary file's suffix: one random token per process, then a counter. */
function temporarySuffix(): string {
  processToken ??= randomBytes(8).toString('hex');
  return `${processToken}.${written++}`;
}

/** The temporary file a write of `name` goes through before its rename (manifest-staging.ts stages into such files too). */
export function temporaryName(name: string, suffix: string = temporarySuffix()): string {
  return `.${name}.${suffix}.tmp`;
}
