import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MANIFEST_SUFFIX } from './render.js';

/**
 * Writes the rendered files into `outDir`: each through a temporary file and
 * a rename, so no reader (or crash) sees a half-written manifest. Manifests a
 * previous run wrote for clusters that no longer exist are removed, so a
 * GitOps repository that commits the directory deletes them too; other files
 * in the directory are left alone.
 */
export function writeManifests(outDir: string, files: ReadonlyMap<string, string>): { written: number; removed: string[] } {
  mkdirSync(outDir, { recursive: true });
  for (const [name, content] of files) {
    const target = join(outDir, name);
    const temporary = join(outDir, `.${name}.${process.pid}.tmp`);
    writeFileSync(temporary, content);
    renameSync(temporary, target);
  }
  const removed = readdirSync(outDir).filter((name) => name.endsWith(MANIFEST_SUFFIX) && !files.has(name));
  for (const name of removed) rmSync(join(outDir, name));
  return { written: files.size, removed };
}
