/**
 * The API layer (api/ and model/: the schema, validation, the configuration,
 * the CRD, names and hashes) knows nothing of how a DistributedKV is
 * rendered: nothing it imports, directly or through another module, comes
 * from constructs/ or from cdk8s. The generator, the controller and the CLI
 * build on it, never the other way round, so validating a spec or loading a
 * configuration never loads the generator. The construct library published
 * apart (index.ts and all it imports: cdk8s-distributedkv) loads none of the
 * controller's packages, so a cdk8s app that takes it installs none of them.
 * The CLI is the top: nothing else
 * imports from cli/ (what the controller and `dkv export` share sits in
 * api/). engines/ stand under backup/: an engine snapshots and restores its
 * own data, backup/ knows where backups live and how they are checked, and
 * hands that in. And no module imports itself back through another, type
 * imports included. Checked on the import statements themselves
 * (TypeScript's own pre-parser: static, type-only, re-exports and dynamic
 * imports alike).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { ROOT } from './support.js';
import { controllerPackages } from '../../scripts/pack-packages.js';

/** Every .ts file under a directory of the source tree (or the file itself, given one: `index.ts`). */
function sourceFiles(dir: string): string[] {
  if (!statSync(join(ROOT, dir)).isDirectory()) return [dir];
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

/** Every file's imports of other source files, over the whole tree (tests, benchmarks and scripts too). */
function importGraph(dirs: readonly string[]): Map<string, string[]> {
  return new Map(dirs.flatMap(sourceFiles).map((file) => [file, importsOf(file).files]));
}

/**
 * The import circles of a graph: each group of files that reach one another
 * through their imports (its strongly connected components, by Tarjan's
 * algorithm), and a file that imports itself. Sorted, so a failure reads the same each run.
 */
function importCircles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const order = new Map<string, number>();
  const lowest = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (file: string): void => {
    order.set(file, order.size);
    lowest.set(file, order.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!graph.has(target)) continue;
      if (!order.has(target)) {
        visit(target);
        lowest.set(file, Math.min(lowest.get(file)!, lowest.get(target)!));
      } else if (onStack.has(target)) {
        lowest.set(file, Math.min(lowest.get(file)!, order.get(target)!));
      }
    }
    if (lowest.get(file) !== order.get(file)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== file);
    if (group.length > 1 || graph.get(file)!.includes(file)) circles.push(group.sort());
  };
  for (const file of graph.keys()) if (!order.has(file)) visit(file);
  return circles.sort((a, b) => a[0].localeCompare(b[0]));
}

const SOURCE_DIRS = ['api', 'backup', 'bench', 'cli', 'constructs', 'conversion', 'engines', 'imports', 'kube', 'model', 'reconciler', 'scripts', 'test'];
/** The product's folders below the CLI (everything it ships but cli/ itself). */
const BELOW_CLI = ['api', 'backup', 'constructs', 'conversion', 'engines', 'imports', 'kube', 'model', 'reconciler'];

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

  it('cli/ is the top: nothing the product ships besides the CLI imports from it (the controller included)', () => {
    expect(forbiddenChains([...BELOW_CLI, 'index.ts'], (target, isPackage) => !isPackage && target.startsWith('cli/'))).toEqual([]);
  });

  it('engines/ stand under backup/: an engine imports nothing from backup/, directly or through another module', () => {
    expect(forbiddenChains(['engines'], (target, isPackage) => !isPackage && target.startsWith('backup/'))).toEqual([]);
  });

  it('no source file imports itself back through other files, type-only imports included', () => {
    expect(importCircles(importGraph([...SOURCE_DIRS, 'index.ts']))).toEqual([]);
  });

  it('the Day-2 steps decide and the core writes: no file in reconciler/day2/ is handed the reconcile context', () => {
    const graph = importGraph(['reconciler/day2']);
    expect(graph.size).toBeGreaterThan(5);
    expect([...graph].filter(([, targets]) => targets.includes('reconciler/core/reconcile-context.ts')).map(([file]) => file)).toEqual([]);
    // Nor through another module of the core (reconcile.ts re-exports the context; report.ts and execute-writes.ts write):
    // of the core, a step may know only what it returns (step-decision.ts, and the Degraded reasons it names: status.ts,
    // which computes the status and writes nothing) and whose an object is (ownership.ts).
    const STEP_VOCABULARY = ['reconciler/core/step-decision.ts', 'reconciler/core/status.ts', 'reconciler/core/ownership.ts'];
    expect(forbiddenChains(['reconciler/day2'], (target, isPackage) => !isPackage && target.startsWith('reconciler/core/') && !STEP_VOCABULARY.includes(target))).toEqual([]);
    // The same walk from the core finds the core's own modules, so an empty list above means none is reached.
    expect(forbiddenChains(['reconciler/core/reconcile.ts'], (target, isPackage) => !isPackage && target.startsWith('reconciler/core/') && !STEP_VOCABULARY.includes(target))).toContain('reconciler/core/reconcile.ts -> reconciler/core/report.ts');
  });

  it('finds an import circle where there is one, so that an empty list means there is none', () => {
    const graph = new Map([
      ['a.ts', ['b.ts', 'd.ts']], ['b.ts', ['c.ts']], ['c.ts', ['a.ts', 'external.ts']], ['d.ts', []], ['e.ts', ['e.ts']], ['f.ts', ['d.ts']],
    ]);
    expect(importCircles(graph)).toEqual([['a.ts', 'b.ts', 'c.ts'], ['e.ts']]);
    expect(importCircles(new Map([['a.ts', ['b.ts']], ['b.ts', []]]))).toEqual([]);
    // The walk over the tree reaches the reconciler's folders and sees type-only imports.
    const graphOfTree = importGraph(['reconciler']);
    expect(graphOfTree.get('reconciler/core/reconcile.ts')).toContain('reconciler/core/reconcile-context.ts');
    expect(graphOfTree.get('reconciler/core/reconcile-context.ts')).toContain('reconciler/process/events.ts');
    // The rules above walk the folders they name: a chain into cli/ from cli/ itself is found.
    expect(forbiddenChains(['cli'], (target, isPackage) => !isPackage && target.startsWith('cli/'))).toContain('cli/main.ts -> cli/synth-command.ts');
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
