import { closeSync, constants, existsSync, lstatSync, openSync, readdirSync, readSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import { manifestOrigin } from './manifest-header.js';
import type { SpecInputs } from './read-specs.js';
import { MANIFEST_SUFFIX } from './render.js';

/** Enough bytes for any header line (a long spec path included). */
const HEADER_BYTES = 8192;

/** The first line of a regular file, read without following a symlink; undefined when it cannot be read. */
function firstLine(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch {
    return undefined;
  }
  try {
    const buffer = Buffer.alloc(HEADER_BYTES);
    const length = readSync(fd, buffer, 0, HEADER_BYTES, 0);
    return buffer.subarray(0, length).toString('utf8').split('\n')[0];
  } finally {
    closeSync(fd);
  }
}

/**
 * Whether this run read the spec file a manifest came from, or would have:
 * the same file, or a file in a directory it searched that is gone now. A
 * file there that still exists but was not read (not .yaml) is not in scope:
 * a run never judges a source it did not read.
 */
function readThisRun(source: string, inputs: SpecInputs): boolean {
  if (inputs.files.some((file) => resolve(file) === source)) return true;
  const inSearchedDirectory = inputs.directories.some((dir) => source.startsWith(resolve(dir) + sep));
  return inSearchedDirectory && !existsSync(source);
}

/**
 * The manifests in `outDir` that a run which wrote `written` and read
 * `inputs` should remove: files whose header says `dkv synth` rendered them
 * from a spec file this run read, and that this run did not write again, so
 * their cluster is gone from that file (or the file itself is gone). Anything
 * else stays: files without the header (another chart's output, hand-written
 * YAML), manifests of spec files this run did not read (a partial run), the
 * CRD (its header names no spec), symlinks and directories.
 */
export function staleManifests(outDir: string, written: ReadonlySet<string>, inputs: SpecInputs): string[] {
  return readdirSync(outDir)
    .filter((name) => name.endsWith(MANIFEST_SUFFIX) && !written.has(name))
    .filter((name) => lstatSync(join(outDir, name)).isFile())
    .filter((name) => {
      const line = firstLine(join(outDir, name));
      const source = line === undefined ? undefined : manifestOrigin(outDir, line)?.source;
      return source !== undefined && readThisRun(source, inputs);
    })
    .sort();
}
