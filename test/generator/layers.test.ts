/**
 * The API layer (api/ and model/: the schema, validation, the configuration,
 * the CRD, names and hashes) knows nothing of how a DistributedKV is
 * rendered: nothing it imports, directly or through another module, comes
 * from constructs/ or from cdk8s. The generator, the controller and the CLI
 * build on it, never the other way round, so validating a spec or loading a
 * configuration never loads the generator. The construct library published
 * apart (index.ts and all it imports: cdk8s-distributedkv) loads none of the
 * controller's packages, so a cdk8s app that takes it installs none of them.
 * Checked on the import statements
 * themselves (TypeScript's own pre-parser: static, type-only, re-exports and
 * dynamic imports alike).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { ROOT } from './support.js';
import { controllerPackages } from '../../scripts/pack-packages.js';

/** Every .ts file under a directory of the source tree. */
function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(join(ROOT, path)).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  });
}

/** What a file imports: source files (repository-relative, `.ts`) and packages (by name). */
function importsOf(file: string): { files: string[]; packages: string[] } {
  const { importedFiles } = ts.preProcessFile(readFileSync(join(ROOT, file), 'utf8'), true, true);
  const files: string[] = [];
  const packages: string[] = [];
  for (const { fileName: specifier } of importedFiles) {
    if (specifier.startsWith('.')) {
      files.push(relative(ROOT, resolve(ROOT, dirname(file), specifier)).replace(/\.js$/, '.ts'));
    } else if (!specifier.startsWith('node:')) {
      packages.push(specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]);
    }
  }
  return { files, packages };
}

/** Every import chain from the layer's files (a directory's, or one file's) that reaches something `forbidden` says is out of bounds: `api/a.ts -> engines/b.ts -> constructs/c.ts`. */
function forbiddenChains(layer: readonly string[], forbidden: (target: string, isPackage: boolean) => boolean): string[] {
  const chains: string[] = [];
  const via = new Map<string, string>(); // file -> the chain that first reached it
  const queue = layer.flatMap((start) => (start.endsWith('.ts') ? [start] : sourceFiles(start)));
  for (const file of queue) via.set(file, file);
  while (queue.length > 0) {
    const file = queue.shift()!;
    const { files, packages } = importsOf(file);
    for (const target of files) {
      if (forbidden(target, false)) chains.push(`${via.get(file)} -> ${target}`);
      else if (!via.has(target)) {
        via.set(target, `${via.get(file)} -> ${target}`);
        queue.push(target);
      }
    }
    for (const name of packages) if (forbidden(name, true)) chains.push(`${via.get(file)} -> ${name}`);
  }
  return chains;
}

const RENDERING_PACKAGES = ['cdk8s', 'cdk8s-plus-27', 'constructs'];
/** The toolkit's dependencies the construct library's manifest does not declare: the Kubernetes client, the AWS SDK, pino, prom-client, node-forge, cron-parser. */
const CONTROLLER_PACKAGES = controllerPackages();

describe('the layers', () => {
  it('api/ and model/ import nothing from constructs/, directly or through another module', () => {
    expect(forbiddenChains(['api', 'model'], (target, isPackage) => !isPackage && target.startsWith('constructs/'))).toEqual([]);
  });

  it('api/ and model/ load no cdk8s package: validating a spec never loads the renderer', () => {
    expect(forbiddenChains(['api', 'model'], (target, isPackage) => isPackage && RENDERING_PACKAGES.includes(target))).toEqual([]);
  });

  it('model/ stands under api/: it imports nothing from api/', () => {
    expect(forbiddenChains(['model'], (target, isPackage) => !isPackage && target.startsWith('api/'))).toEqual([]);
  });

  it('the construct library (index.ts and all it imports) loads none of the controller\'s packages', () => {
    expect(CONTROLLER_PACKAGES).toEqual(expect.arrayContaining(['@kubernetes/client-node', '@aws-sdk/client-s3', 'pino', 'prom-client', 'node-forge']));
    expect(forbiddenChains(['index.ts'], (target, isPackage) => isPackage && CONTROLLER_PACKAGES.includes(target))).toEqual([]);
  });

  it('sees an import it must refuse, so that an empty list means there is none', () => {
    // constructs/ itself imports from constructs/ and from cdk8s: the same walk over it finds both.
    expect(forbiddenChains(['constructs'], (target, isPackage) => !isPackage && target.startsWith('constructs/'))).toContain('constructs/distributed-kv.ts -> constructs/stateful-set.ts');
    expect(forbiddenChains(['constructs'], (target, isPackage) => isPackage && RENDERING_PACKAGES.includes(target))).toContain('constructs/distributed-kv.ts -> cdk8s');
    // The CLI reaches the Kubernetes client: the walk from one file follows its imports.
    expect(forbiddenChains(['cli/main.ts'], (target, isPackage) => isPackage && CONTROLLER_PACKAGES.includes(target)).join('\n')).toMatch(/^cli\/main\.ts( -> \S+)* -> @kubernetes\/client-node$/m);
    // Type-only imports, re-exports and dynamic imports count as imports too.
    const specifiers = ts.preProcessFile("import type { A } from './a.js';\nexport { B } from '../b.js';\nconst c = await import('./c.js');\n", true, true).importedFiles.map((f) => f.fileName);
    expect(specifiers).toEqual(['./a.js', '../b.js', './c.js']);
  });
});
