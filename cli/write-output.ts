import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, mkdirSync, openSync, readdirSync, readSync, renameSync, rmSync, writeFileSync } from 'node:fs';
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
 * `suffix` exists so a test can know the temporary name. By default it is
 * this process's random token and a counter: as unguessable to another user
 * as a fresh random name per file (O_EXCL is the guard either way), without
 * a getrandom call for each of a thousand manifests.
 */
export function writeFileAtomically(dir: string, name: string, content: string, suffix: string = temporarySuffix()): void {
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

let processToken: string | undefined;
let written = 0;

/** A temporary file's suffix: one random token per process, then a counter. */
function temporarySuffix(): string {
  processToken ??= randomBytes(8).toString('hex');
  return `${processToken}.${written++}`;
}

/** The mode writeFileAtomically gives a new file: 0644 less the umask. */
function newFileMode(): number {
  return 0o644 & ~process.umask();
}

/**
 * Whether `dir/name` already is what writing `content` there would leave:
 * a regular file of this user, with one link and a new file's mode, holding
 * exactly these bytes. Only then may a run leave it alone: a symlink or a
 * hard link would be replaced by the rename, another mode reset. A rerun
 * that changes nothing (a GitOps pipeline's usual run) then renames
 * nothing, and the files' times say when their content last changed.
 */
function alreadyWritten(dir: string, name: string, content: string, mode: number): boolean {
  let fd: number;
  try {
    fd = openSync(join(dir, name), constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch {
    return false;
  }
  try {
    const stat = fstatSync(fd);
    const expected = Buffer.from(content);
    if (!stat.isFile() || stat.nlink !== 1 || (stat.mode & 0o7777) !== mode || stat.uid !== process.getuid?.() || stat.size !== expected.length) return false;
    const actual = Buffer.allocUnsafe(expected.length);
    let read = 0;
    for (let n = 1; n > 0 && read < actual.length; read += n) n = readSync(fd, actual, read, actual.length - read, read);
    return read === actual.length && actual.equals(expected);
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes the rendered files into `outDir`, then removes the manifests an
 * earlier run wrote for clusters that the spec files read by this run
 * (`inputs`) no longer hold, so a GitOps repository that commits the
 * directory deletes them too. Everything else in the directory is left
 * alone: see staleManifests. A file that already holds its content is left
 * as it is (alreadyWritten).
 */
export function writeManifests(outDir: string, files: ReadonlyMap<string, string>, inputs: SpecInputs): { written: number; removed: string[] } {
  mkdirSync(outDir, { recursive: true });
  const present = new Set(readdirSync(outDir)); // a fresh directory: nothing to compare, no file opened twice
  const mode = newFileMode();
  for (const [name, content] of files) {
    if (present.has(name) && alreadyWritten(outDir, name, content, mode)) continue;
    writeFileAtomically(outDir, name, content);
  }
  const removed = staleManifests(outDir, new Set(files.keys()), inputs);
  for (const name of removed) rmSync(join(outDir, name));
  return { written: files.size, removed };
}
