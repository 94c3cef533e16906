import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The directory holding the package.json of the package a module belongs to.
 * Source files run from `api/` under jest and from `lib/api/` when compiled,
 * so files shipped with a package (the schema, the default configuration, the
 * examples) are found by walking up rather than by a fixed relative path.
 *
 * Published, this module belongs to the construct library (cdk8s-distributedkv),
 * and the toolkit reaches it through that package: a toolkit module looking
 * for the toolkit's own files (the examples) passes its `import.meta.url`, or
 * the walk would start in the construct library and find that package's root.
 */
export function packageRoot(from: string = import.meta.url): string {
  let dir = dirname(fileURLToPath(from));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('package.json not found above ' + fileURLToPath(from));
    dir = parent;
  }
  return dir;
}
