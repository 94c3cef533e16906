import { mkdirSync, readdirSync } from 'node:fs';
import { constants, open, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { staleManifests } from './prune.js';
import type { SpecInputs } from './read-specs.js';
import { temporaryName } from './write-output.js';

/** One staged file: its name, and the temporary file holding its new content (none when the file already holds it). */
interface Staged {
  readonly name: string;
  readonly temporary?: string;
}

/**
 * The files of one `dkv synth` run, staged while the rest still renders.
 *
 * Each file is written to a temporary file of its own (created exclusively,
 * O_CREAT | O_EXCL, so a planted file or symlink fails the run instead of
 * being written through) as soon as it is rendered; the writes run on
 * libuv's threads, so on a machine of two cores the file system's time (half
 * of a 1,000-spec run into a fresh directory on ext4, and the part that
 * swings by 2× between runs: docs/performance.md) overlaps the rendering on
 * this thread instead of following it. Nothing a reader sees changes until
 * `commit`, which renames every temporary file onto its name, then prunes;
 * `discard` (a run refused after rendering, see peer-scheme-guard.ts) removes
 * them and leaves the directory as it was. A file that already holds exactly
 * its content is left alone (alreadyWritten), so a rerun that changes nothing
 * renames nothing.
 */
export class ManifestStaging {
  private readonly present: ReadonlySet<string>;
  private readonly mode = 0o644 & ~process.umask();
  private readonly staged: Promise<Staged>[] = [];

  constructor(private readonly outDir: string) {
    mkdirSync(outDir, { recursive: true });
    this.present = new Set(readdirSync(outDir)); // a fresh directory: nothing to compare, no file opened twice
  }

  /** Starts writing `content` for `name`; returns at once. */
  stage(name: string, content: string): void {
    const staged = this.prepare(name, content);
    staged.catch(() => undefined); // the failure is commit's or discard's to report, not an unhandled rejection meanwhile
    this.staged.push(staged);
  }

  /**
   * Waits for every staged write, renames each onto its name, then removes
   * the manifests an earlier run wrote for clusters the spec files read by
   * this run (`inputs`) no longer hold, so a GitOps repository that commits
   * the directory deletes them too (prune.ts). A failed write removes every
   * temporary file and throws it: nothing is renamed.
   */
  async commit(inputs: SpecInputs): Promise<{ written: number; removed: string[] }> {
    const staged = await this.settle();
    await Promise.all(staged.map(({ name, temporary }) => temporary && rename(temporary, join(this.outDir, name))));
    const removed = staleManifests(this.outDir, new Set(staged.map(({ name }) => name)), inputs);
    await Promise.all(removed.map((name) => rm(join(this.outDir, name))));
    return { written: staged.length, removed };
  }

  /** Removes every temporary file; the directory is left as it was. */
  async discard(): Promise<void> {
    const outcomes = await Promise.allSettled(this.staged);
    await removeTemporaries(outcomes);
  }

  /** Every staged file, or the first failure in staging order once every temporary file is removed. */
  private async settle(): Promise<Staged[]> {
    const outcomes = await Promise.allSettled(this.staged);
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (!failed) return outcomes.map((o) => (o as PromiseFulfilledResult<Staged>).value);
    await removeTemporaries(outcomes);
    throw failed.reason;
  }

  private async prepare(name: string, content: string): Promise<Staged> {
    if (this.present.has(name) && (await alreadyWritten(join(this.outDir, name), content, this.mode))) return { name };
    const temporary = join(this.outDir, temporaryName(name));
    try {
      await writeFile(temporary, content, { flag: 'wx', mode: 0o644 });
    } catch (e) {
      // 'wx' never opened a file it did not create: only one it created (and then failed to fill) is removed.
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') await rm(temporary, { force: true });
      throw e;
    }
    return { name, temporary };
  }
}

async function removeTemporaries(outcomes: readonly PromiseSettledResult<Staged>[]): Promise<void> {
  await Promise.all(outcomes.map((o) => o.status === 'fulfilled' && o.value.temporary && rm(o.value.temporary, { force: true })));
}

/**
 * Whether `path` already is what writing `content` there would leave: a
 * regular file of this user, with one link and a new file's mode, holding
 * exactly these bytes. Only then may a run leave it alone: a symlink or a
 * hard link would be replaced by the rename, another mode reset. A rerun
 * that changes nothing (a GitOps pipeline's usual run) then renames
 * nothing, and the files' times say when their content last changed.
 */
async function alreadyWritten(path: string, content: string, mode: number): Promise<boolean> {
  let file;
  try {
    file = await open(path, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch {
    return false;
  }
  try {
    const stat = await file.stat();
    const expected = Buffer.from(content);
    if (!stat.isFile() || stat.nlink !== 1 || (stat.mode & 0o7777) !== mode || stat.uid !== process.getuid?.() || stat.size !== expected.length) return false;
    const actual = Buffer.allocUnsafe(expected.length);
    let read = 0;
    for (let n = 1; n > 0 && read < actual.length; read += n) ({ bytesRead: n } = await file.read(actual, read, actual.length - read, read));
    return read === actual.length && actual.equals(expected);
  } finally {
    await file.close();
  }
}
