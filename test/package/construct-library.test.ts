/**
 * The construct library (cdk8s-distributedkv) as a cdk8s user takes it:
 * packed (`npm run pack:packages`), installed alone from the tarball into a
 * fresh cdk8s app outside this tree (dependencies from the npm registry, as
 * any install), composed there next to a cdk8s-plus Deployment, and rendered
 * by `cdk8s synth`. What it renders for a spec must be exactly what
 * `dkv synth` writes for the same spec, and the app must not install the
 * controller's dependencies to get it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { packageRoot } from '../../api/package-root.js';
import { constructsManifest, controllerPackages, libraryClosure, packPackages } from '../../scripts/pack-packages.js';

const root = packageRoot();
const ours = constructsManifest();
const versionOf = (name: string): string => JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version;
const documents = (file: string): any[] => parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS()).filter(Boolean);
const byKindAndName = (a: any, b: any) => `${a.kind}/${a.metadata.name}`.localeCompare(`${b.kind}/${b.metadata.name}`);

describe('the construct library, packed and installed into a cdk8s app of its own', () => {
  let dir: string;
  let app: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'dkv-consumer-'));
    // The compiled library is what the tarball carries (npm test's pretest compiles it); no scripts run.
    const { constructs } = packPackages(dir);
    app = join(dir, 'shop-app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({
      name: 'shop-app', private: true, type: 'module',
      dependencies: { [ours.name]: `file:${constructs.tarball}`, cdk8s: versionOf('cdk8s'), 'cdk8s-plus-27': versionOf('cdk8s-plus-27'), constructs: versionOf('constructs') },
    }, null, 2));
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] });
  }, 300_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('exports the construct, the chart, the synthesis function, the validator and the types from its entry point, with declarations', () => {
    const exported = execFileSync(process.execPath, ['--input-type=module', '-e', `import * as dkv from '${ours.name}'; console.log(JSON.stringify(Object.keys(dkv).sort()))`], { cwd: app, encoding: 'utf8' });
    expect(JSON.parse(exported)).toEqual(expect.arrayContaining(['DistributedKVCluster', 'DistributedKVChart', 'synthesizeCluster', 'validateDistributedKV', 'loadDefaultConfig', 'loadConfig', 'customResourceDefinition']));
    const declarations = readFileSync(join(app, 'node_modules', ours.name, 'lib', 'index.d.ts'), 'utf8');
    expect(declarations).toMatch(/DistributedKVSpec/);
    // Only what a user runs: no tests, no benchmarks.
    expect(readdirSync(join(app, 'node_modules', ours.name, 'lib'))).not.toEqual(expect.arrayContaining(['test']));
    expect(readdirSync(join(app, 'node_modules', ours.name, 'lib'))).not.toEqual(expect.arrayContaining(['bench']));
  });

  it('holds only the construct library: index.js and the modules it imports, no CLI, controller or backup runner, no dkv command', () => {
    const lib = join(app, 'node_modules', ours.name, 'lib');
    const shipped = readdirSync(lib, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js')).map((f) => f.replace(/\.js$/, '')).sort();
    expect(shipped).toEqual(libraryClosure(join(root, 'lib')).modules);
    for (const controllerOnly of ['cli', 'reconciler', 'kube', 'conversion']) expect(existsSync(join(lib, controllerOnly))).toBe(false);
    expect(existsSync(join(lib, 'backup', 'run-backup.js'))).toBe(false);
    expect(existsSync(join(app, 'node_modules', '.bin', 'dkv'))).toBe(false);
  });

  it('type-checks a TypeScript app against its declarations: the construct, the spec\'s type and a field of it', () => {
    writeFileSync(join(app, 'typed.ts'), `
import { App, Chart } from 'cdk8s';
import { DistributedKVCluster, type DistributedKVSpec } from '${ours.name}';
const spec: DistributedKVSpec = { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0' };
const size: number = spec.size;
DistributedKVCluster.fromDocument(new Chart(new App(), 'shop'), 'orders', { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'orders' }, spec });
// @ts-expect-error: the spec's type refuses a field the API does not have
const wrong: DistributedKVSpec = { size, image: 'registry.k8s.io/etcd:3.6.8-0', replicas: 3 };
export { wrong };
`);
    writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: true, types: [] }, files: ['typed.ts'] }));
    execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', app], { cwd: app, encoding: 'utf8' });
  });

  it('loads from a CommonJS app too (require, as a cdk8s TypeScript app compiles to)', () => {
    writeFileSync(join(app, 'main.cjs'), `const { DistributedKVCluster } = require('${ours.name}'); console.log(typeof DistributedKVCluster.fromDocument);`);
    expect(execFileSync(process.execPath, ['--no-warnings', 'main.cjs'], { cwd: app, encoding: 'utf8' }).trim()).toBe('function');
  });

  it('installs none of the controller\'s dependencies into the app (the Kubernetes client, the AWS SDK, pino, prom-client, node-forge)', () => {
    const packages = controllerPackages();
    expect(packages).toEqual(expect.arrayContaining(['@kubernetes/client-node', '@aws-sdk/client-s3', 'pino', 'prom-client', 'node-forge']));
    const installed = packages.filter((name) => existsSync(join(app, 'node_modules', name, 'package.json')));
    expect(installed).toEqual([]);
    expect(existsSync(join(app, 'node_modules', '@aws-sdk'))).toBe(false);
    // The walk above is only as good as its paths: the library's own dependencies are found the same way.
    expect(['cdk8s-plus-27', 'ajv', 'yaml'].filter((name) => existsSync(join(app, 'node_modules', name, 'package.json')))).toEqual(['cdk8s-plus-27', 'ajv', 'yaml']);
  });

  it('renders, next to a cdk8s-plus Deployment in the same chart, exactly what dkv synth writes for the same spec', () => {
    const [orders] = documents(join(root, 'examples', 'orders.yaml'));
    writeFileSync(join(app, 'main.js'), `
import { App, Chart } from 'cdk8s';
import * as kplus from 'cdk8s-plus-27';
import { DistributedKVCluster } from '${ours.name}';

const app = new App();
const chart = new Chart(app, 'shop', { namespace: 'shop' });
new kplus.Deployment(chart, 'web', { containers: [{ image: 'registry.example.com/shop/web:1.0.0', portNumber: 8080 }] });
DistributedKVCluster.fromDocument(chart, 'orders', ${JSON.stringify(orders)});
app.synth();
`);
    writeFileSync(join(app, 'cdk8s.yaml'), 'app: node main.js\noutput: dist\n');
    execFileSync(join(root, 'node_modules', '.bin', 'cdk8s'), ['synth', '--check-upgrade=false'], { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] });
    const rendered = documents(join(app, 'dist', 'shop.k8s.yaml'));
    expect(rendered.filter((o) => o.kind === 'Deployment')).toHaveLength(1);

    const specs = join(dir, 'specs');
    mkdirSync(specs);
    writeFileSync(join(specs, 'orders.yaml'), readFileSync(join(root, 'examples', 'orders.yaml')));
    execFileSync(process.execPath, [join(root, 'bin', 'dkv.js'), 'synth', '--specs', specs, '--out', join(dir, 'out')], { stdio: ['ignore', 'pipe', 'pipe'] });
    const written = documents(join(dir, 'out', 'shop.orders.k8s.yaml'));
    expect(written.length).toBeGreaterThan(4);
    expect(rendered.filter((o) => o.kind !== 'Deployment').sort(byKindAndName)).toEqual(written.sort(byKindAndName));
  });

  it('refuses an invalid spec with every problem and its field path, before anything is rendered', () => {
    writeFileSync(join(app, 'bad.js'), `
import { App, Chart } from 'cdk8s';
import { DistributedKVCluster } from '${ours.name}';
const chart = new Chart(new App(), 'shop');
try {
  DistributedKVCluster.fromDocument(chart, 'orders', { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'orders' }, spec: { size: 10, image: '' } });
} catch (e) {
  console.log(e.name + ': ' + e.message);
}
`);
    const out = execFileSync(process.execPath, ['bad.js'], { cwd: app, encoding: 'utf8' });
    expect(out).toMatch(/^InputError: DistributedKV shop\/orders: spec\.size: .*9/m);
    expect(out).toMatch(/^DistributedKV shop\/orders: spec\.image: /m);
  });
});
