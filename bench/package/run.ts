/**
 * `npm run bench:package`: what a cdk8s user pays to take the library: the
 * packed tarball's size and file count, the time to install it into a fresh
 * cdk8s app (dependencies from the npm registry through npm's cache, as on
 * a developer's machine), and `cdk8s synth` of one cluster there, beside the
 * baseline of the same app with cdk8s, cdk8s-plus-27 and constructs alone
 * (what any cdk8s app installs anyway). Figures only; nothing is asserted.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../../api/package-root.js';
import { runtimeAndMachine } from '../machine.js';

const root = packageRoot();
const ours = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const versionOf = (name: string): string => JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version;
const seconds = (fn: () => void): number => {
  const started = performance.now();
  fn();
  return (performance.now() - started) / 1000;
};
const du = (dir: string): number => Number(execFileSync('du', ['-sk', dir], { encoding: 'utf8' }).split('\t')[0]) / 1024;

const dir = mkdtempSync(join(tmpdir(), 'dkv-bench-package-'));
try {
  const packed = JSON.parse(execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }))[0];
  const app = (name: string, withLibrary: boolean): string => {
    const at = join(dir, name);
    mkdirSync(at);
    const dependencies: Record<string, string> = { cdk8s: versionOf('cdk8s'), 'cdk8s-plus-27': versionOf('cdk8s-plus-27'), constructs: versionOf('constructs') };
    if (withLibrary) dependencies[ours.name] = `file:${join(dir, packed.filename)}`;
    writeFileSync(join(at, 'package.json'), JSON.stringify({ name, private: true, type: 'module', dependencies }));
    return at;
  };
  const install = (at: string) => seconds(() => execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], { cwd: at, stdio: 'ignore' }));
  const baseline = app('baseline-app', false);
  const baselineSeconds = install(baseline);
  const consumer = app('shop-app', true);
  const consumerSeconds = install(consumer);
  writeFileSync(join(consumer, 'main.js'), `import { App, Chart } from 'cdk8s';
import { DistributedKVCluster } from '${ours.name}';
const app = new App();
DistributedKVCluster.fromDocument(new Chart(app, 'shop', { namespace: 'shop' }), 'orders',
  { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'orders' }, spec: { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0' } });
app.synth();
`);
  writeFileSync(join(consumer, 'cdk8s.yaml'), 'app: node main.js\noutput: dist\n');
  const synthSeconds = seconds(() => execFileSync(join(root, 'node_modules', '.bin', 'cdk8s'), ['synth', '--check-upgrade=false'], { cwd: consumer, stdio: 'ignore' }));
  const rows: [string, string][] = [
    ['measured on', runtimeAndMachine()],
    ['packed tarball', `${(packed.size / 1024).toFixed(0)} KiB (${(packed.unpackedSize / 1024).toFixed(0)} KiB unpacked, ${packed.entryCount} files)`],
    ['install into a fresh cdk8s app (npm cache warm)', `${consumerSeconds.toFixed(1)} s, node_modules ${du(join(consumer, 'node_modules')).toFixed(0)} MiB`],
    ['baseline: the same app with cdk8s, cdk8s-plus-27, constructs alone', `${baselineSeconds.toFixed(1)} s, node_modules ${du(join(baseline, 'node_modules')).toFixed(0)} MiB`],
    ['cdk8s synth of one cluster in that app', `${synthSeconds.toFixed(1)} s`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  for (const [k, v] of rows) process.stdout.write(`${k.padEnd(width)}  ${v}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
