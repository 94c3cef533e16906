/**
 * The toolkit package (distributedkv-toolkit: the `dkv` CLI, the controller,
 * the backup runner) as a user installs it from its tarball, beside the
 * construct library it depends on at the same version: `dkv` runs from
 * node_modules/.bin, finds the examples it ships, and renders them as the
 * repository's `dkv synth` does. Its construct modules are the library's own,
 * re-exported, so an app that loads both packages has one copy of each class.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../../api/package-root.js';
import { constructsManifest, packPackages, rootManifest, type PackedPackage } from '../../scripts/pack-packages.js';

const root = packageRoot();
const library = constructsManifest();
const toolkit = rootManifest();
/** A generated manifest without its first line, which names the spec file by its path relative to the output. */
const withoutHeader = (text: string): string => text.slice(text.indexOf('\n') + 1);

describe('the toolkit package, installed from its tarball with the construct library', () => {
  let dir: string;
  let app: string;
  let packed: { constructs: PackedPackage; toolkit: PackedPackage };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'dkv-toolkit-'));
    packed = packPackages(dir);
    app = join(dir, 'ops');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({
      name: 'ops', private: true, type: 'module',
      dependencies: { [library.name]: `file:${packed.constructs.tarball}`, [toolkit.name]: `file:${packed.toolkit.tarball}` },
    }, null, 2));
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] });
  }, 300_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('has the same version as the construct library and depends on exactly that version', () => {
    expect(packed.constructs.version).toBe(toolkit.version);
    expect(packed.toolkit.version).toBe(toolkit.version);
    const installed = JSON.parse(readFileSync(join(app, 'node_modules', toolkit.name, 'package.json'), 'utf8'));
    expect(installed.dependencies[library.name]).toBe(toolkit.version);
    // Nothing of the development tree's manifest that a user's install would act on.
    expect(installed).not.toHaveProperty('scripts');
    expect(installed).not.toHaveProperty('devDependencies');
    expect(installed).not.toHaveProperty('private');
  });

  it('runs dkv from node_modules/.bin and renders the examples it ships exactly as the repository\'s dkv synth does', () => {
    const help = execFileSync(join(app, 'node_modules', '.bin', 'dkv'), ['--help'], { cwd: app, encoding: 'utf8' });
    expect(help).toMatch(/dkv synth/);
    execFileSync(join(app, 'node_modules', '.bin', 'dkv'), ['synth', '--out', 'out'], { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] });
    const written = readdirSync(join(app, 'out')).sort();
    expect(written).toEqual(expect.arrayContaining(['shop.orders.k8s.yaml', 'distributedkvs.example.com.crd.k8s.yaml']));
    for (const file of written) {
      expect({ file, text: withoutHeader(readFileSync(join(app, 'out', file), 'utf8')) }).toEqual({ file, text: withoutHeader(readFileSync(join(root, 'dist', file), 'utf8')) });
    }
  });

  it('loads the construct library\'s modules, not a second copy: one class for both package names', () => {
    const same = execFileSync(process.execPath, ['--input-type=module', '-e', `
import * as toolkit from '${toolkit.name}';
import * as library from '${library.name}';
import { InputError } from '${library.name}/lib/api/problem.js';
console.log(JSON.stringify({
  names: Object.keys(toolkit).sort().join() === Object.keys(library).sort().join(),
  classes: Object.keys(library).every((name) => toolkit[name] === library[name]),
  deep: InputError === library.InputError,
}));`], { cwd: app, encoding: 'utf8' });
    expect(JSON.parse(same)).toEqual({ names: true, classes: true, deep: true });
    const shipped = readFileSync(join(app, 'node_modules', toolkit.name, 'lib', 'constructs', 'distributed-kv.js'), 'utf8');
    expect(shipped).toBe(`export * from '${library.name}/lib/constructs/distributed-kv.js';\n`);
    expect(packed.toolkit.files).not.toEqual(expect.arrayContaining(['api/distributedkv.schema.json', 'dkv.config.yaml']));
  });
});
