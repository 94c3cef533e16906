/**
 * `npm run pack:packages [-- --out <dir>]`: the two npm packages this
 * repository publishes, packed from the one compiled tree (lib/, `npm run build`):
 *
 *   cdk8s-distributedkv    the construct library: index.ts and every module it
 *                          imports (the API, its types, the validator, the
 *                          constructs, synthesizeCluster), the schemas and the
 *                          default configuration they read; manifest:
 *                          packages/constructs/package.json
 *   distributedkv-toolkit  the `dkv` CLI, the controller, the backup runner:
 *                          the root manifest's `files`, depending on
 *                          cdk8s-distributedkv at the same version
 *
 * The toolkit's copies of the construct library's modules are one-line
 * re-exports from cdk8s-distributedkv, so the toolkit's own code (which keeps
 * its relative imports: `../constructs/synthesize.js`) runs the library's
 * modules, and an app that loads both packages has one copy of each class.
 *
 * Why a second manifest built from the same sources, not npm workspaces: a
 * workspace is a folder whose package is what lies under it, so the construct
 * library's sources would have to move out of constructs/, api/, model/,
 * engines/ and imports/ (or be copied under the workspace at build time,
 * which is this staging under another name); and no manifest's `files` can
 * say "ship these modules as re-exports of another package", so the toolkit
 * needs a staging step either way. One root package keeps development as it
 * is (one node_modules, one `tsc -p .`, bin/dkv.js and the image run lib/
 * directly) and leaves the root manifest's dependencies and the lock file
 * alone.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { packageRoot } from '../api/package-root.js';

const root = packageRoot(import.meta.url);

/** The fields of a package.json this script reads or writes. */
export interface Manifest {
  name: string;
  version?: string;
  engines?: Record<string, string>;
  files?: string[];
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  [field: string]: unknown;
}

/** One packed tarball, as `npm pack --json` reports it. */
export interface PackedPackage {
  name: string;
  version: string;
  /** Absolute path of the .tgz. */
  tarball: string;
  size: number;
  unpackedSize: number;
  entryCount: number;
  /** Paths inside the package. */
  files: string[];
}

const readManifest = (file: string): Manifest => JSON.parse(readFileSync(file, 'utf8'));
export const rootManifest = (): Manifest => readManifest(join(root, 'package.json'));
export const constructsManifest = (): Manifest => readManifest(join(root, 'packages', 'constructs', 'package.json'));

/** A package's name from an import specifier: `@aws-sdk/client-s3/x` -> `@aws-sdk/client-s3`. */
const packageName = (specifier: string): string => specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/');

/**
 * The toolkit's dependencies the construct library does not declare: the
 * controller's and the CLI's (the Kubernetes client, the AWS SDK, pino,
 * prom-client, node-forge, cron-parser). The construct library's modules
 * import none of them (test/generator/layers.test.ts), and its install has none.
 */
export function controllerPackages(toolkit: Manifest = rootManifest(), library: Manifest = constructsManifest()): string[] {
  const own = new Set([...Object.keys(library.dependencies ?? {}), ...Object.keys(library.peerDependencies ?? {})]);
  return Object.keys(toolkit.dependencies ?? {}).filter((name) => !own.has(name));
}

/**
 * The construct library's modules, found from the compiled entry point: every
 * module lib/index.js or its declarations import, directly or through
 * another (`api/config` for lib/api/config.js and .d.ts), and the packages
 * they import.
 */
export function libraryClosure(lib: string = join(root, 'lib')): { modules: string[]; packages: string[] } {
  const modules = new Set<string>(['index']);
  const packages = new Set<string>();
  const queue = ['index'];
  while (queue.length > 0) {
    const module = queue.shift()!;
    for (const file of [`${module}.js`, `${module}.d.ts`]) {
      const { importedFiles } = ts.preProcessFile(readFileSync(join(lib, file), 'utf8'), true, true);
      for (const { fileName: specifier } of importedFiles) {
        if (specifier.startsWith('node:')) continue;
        if (!specifier.startsWith('.')) {
          packages.add(packageName(specifier));
          continue;
        }
        if (!specifier.endsWith('.js')) throw new Error(`lib/${file}: imports ${specifier}, not a compiled module (.js)`);
        const target = posix.join(posix.dirname(module), specifier).replace(/\.js$/, '');
        if (!modules.has(target)) {
          modules.add(target);
          queue.push(target);
        }
      }
    }
  }
  return { modules: [...modules].sort(), packages: [...packages].sort() };
}

/** `^2.70.106` holds 2.71.0 and 2.70.106, not 2.70.105 or 3.0.0: the ranges the construct library's peers use. */
function caretHolds(range: string, version: string): boolean {
  const floor = /^\^(\d+)\.(\d+)\.(\d+)$/.exec(range);
  const got = /^(\d+)\.(\d+)\.(\d+)$/.exec(version);
  if (!floor || !got) return false;
  const [a, b] = [floor.slice(1).map(Number), got.slice(1).map(Number)];
  if (a[0] !== b[0]) return false;
  return b[1] > a[1] || (b[1] === a[1] && b[2] >= a[2]);
}

/**
 * Why the two manifests could not be published together, if anything: the
 * construct library imports a package its manifest does not declare, pins a
 * dependency otherwise than the toolkit (two versions in one app), or asks its
 * peers (cdk8s, constructs) for a range the toolkit's own version is outside.
 */
export function manifestProblems(toolkit: Manifest, library: Manifest, imported: readonly string[]): string[] {
  const problems: string[] = [];
  const where = 'packages/constructs/package.json';
  for (const name of imported) {
    if (!library.dependencies?.[name] && !library.peerDependencies?.[name]) problems.push(`${where}: dependencies: the construct library imports ${name}, which is neither a dependency nor a peer dependency`);
  }
  for (const [name, spec] of Object.entries(library.dependencies ?? {})) {
    if (toolkit.dependencies?.[name] !== spec) problems.push(`${where}: dependencies.${name}: must be the toolkit's ${toolkit.dependencies?.[name] ?? '(none)'} (got ${spec})`);
  }
  for (const [name, range] of Object.entries(library.peerDependencies ?? {})) {
    const pinned = toolkit.dependencies?.[name];
    if (!pinned || !caretHolds(range, pinned)) problems.push(`${where}: peerDependencies.${name}: must be a ^ range holding the toolkit's ${pinned ?? '(none)'} (got ${range})`);
  }
  return problems;
}

function copy(from: string, to: string): void {
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
}

function write(to: string, text: string): void {
  mkdirSync(dirname(to), { recursive: true });
  writeFileSync(to, text);
}

/** Every relative import of a staged module names a staged file: a package never ships a dangling import. */
function danglingImports(dir: string, files: readonly string[]): string[] {
  return files.filter((f) => /\.(?:js|d\.ts)$/.test(f)).flatMap((file) =>
    ts.preProcessFile(readFileSync(join(dir, file), 'utf8'), true, true).importedFiles
      .map(({ fileName }) => fileName)
      .filter((specifier) => specifier.startsWith('.') && !existsSync(resolve(dir, dirname(file), specifier)))
      .map((specifier) => `${file}: ${specifier}`));
}

function pack(dir: string, destination: string): PackedPackage {
  const [packed] = JSON.parse(execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', destination], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
  return {
    name: packed.name, version: packed.version, tarball: join(destination, packed.filename),
    size: packed.size, unpackedSize: packed.unpackedSize, entryCount: packed.entryCount, files: packed.files.map((f: { path: string }) => f.path),
  };
}

/**
 * Stages and packs both packages into `destination` (created if missing)
 * from the compiled tree; throws, naming every problem, if the manifests
 * disagree or a package would ship an import it does not hold.
 */
export function packPackages(destination: string): { constructs: PackedPackage; toolkit: PackedPackage } {
  const toolkit = rootManifest();
  const library = constructsManifest();
  const { modules, packages } = libraryClosure();
  const problems = manifestProblems(toolkit, library, packages);
  for (const module of modules) {
    if (/\bexport\s+default\b|\bas\s+default\b/.test(readFileSync(join(root, 'lib', `${module}.js`), 'utf8'))) problems.push(`lib/${module}.js: a default export, which the toolkit's re-export (export *) would not carry`);
  }
  if (problems.length > 0) throw new Error(problems.join('\n'));
  mkdirSync(destination, { recursive: true });

  const staging = mkdtempSync(join(tmpdir(), 'dkv-pack-'));
  try {
    // The construct library: its modules, and the other files its manifest lists (the schemas and the default configuration it reads).
    const libraryDir = join(staging, 'constructs');
    const libraryFiles = modules.flatMap((m) => [`lib/${m}.js`, `lib/${m}.d.ts`]);
    const dataFiles = (library.files ?? []).filter((entry) => !entry.startsWith('lib/') && entry !== 'README.md');
    for (const file of [...libraryFiles, ...dataFiles]) copy(join(root, file), join(libraryDir, file));
    copy(join(root, 'packages', 'constructs', 'README.md'), join(libraryDir, 'README.md'));
    write(join(libraryDir, 'package.json'), JSON.stringify({ ...library, version: toolkit.version, engines: toolkit.engines }, null, 2) + '\n');

    // The toolkit: what the root manifest's `files` ship (as npm itself reads them), the library's modules replaced by re-exports from it.
    const toolkitDir = join(staging, 'toolkit');
    const [listed] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--ignore-scripts', '--json'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
    const fromLibrary = new Set([...libraryFiles, ...dataFiles]);
    const toolkitFiles: string[] = [];
    for (const { path } of listed.files as { path: string }[]) {
      if (path === 'package.json') continue;
      if (libraryFiles.includes(path)) {
        const module = path.replace(/\.(?:js|d\.ts)$/, '.js');
        write(join(toolkitDir, path), `export * from '${library.name}/${module}';\n`);
      } else if (fromLibrary.has(path)) {
        continue; // read by the library's modules from the library's own package
      } else {
        copy(join(root, path), join(toolkitDir, path));
      }
      toolkitFiles.push(path);
    }
    const { private: _private, scripts: _scripts, devDependencies: _devDependencies, ...published } = toolkit;
    const topLevel = [...new Set(toolkitFiles.map((f) => (f.includes('/') ? `${f.split('/')[0]}/` : f)))].sort();
    write(join(toolkitDir, 'package.json'), JSON.stringify({
      ...published,
      files: topLevel,
      dependencies: Object.fromEntries(Object.entries({ ...toolkit.dependencies, [library.name]: toolkit.version! }).sort(([a], [b]) => a.localeCompare(b))),
    }, null, 2) + '\n');

    const dangling = [...danglingImports(libraryDir, libraryFiles), ...danglingImports(toolkitDir, toolkitFiles)];
    if (dangling.length > 0) throw new Error(`imports of files the package does not hold:\n${dangling.join('\n')}`);
    return { constructs: pack(libraryDir, destination), toolkit: pack(toolkitDir, destination) };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { out: { type: 'string', default: '.' } } });
  const packed = packPackages(resolve(values.out!));
  for (const p of [packed.constructs, packed.toolkit]) {
    process.stdout.write(`${p.name}@${p.version}  ${p.tarball}  ${(p.size / 1024).toFixed(0)} KiB, ${p.entryCount} files\n`);
  }
}
