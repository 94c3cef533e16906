/**
 * `npm run bench:package`: what a cdk8s user pays to take the construct
 * library (cdk8s-distributedkv), beside what any cdk8s app installs anyway
 * and beside the toolkit (distributedkv-toolkit: the dkv CLI and the
 * controller). One run installs three fresh apps (dependencies from the npm
 * registry through npm's cache, as on a developer's machine):
 *   baseline   cdk8s, cdk8s-plus-27 and constructs alone
 *   library    the same, plus the construct library's tarball
 *   toolkit    the same, plus both tarballs (the toolkit needs the library)
 * and prints each one's node_modules size and its difference from the
 * baseline (the library's target: within 10 MiB), the tarballs' sizes, and
 * `cdk8s synth` of one cluster in the library's app. Figures only; nothing
 * is asserted.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../../api/package-root.js';
import { packPackages, type PackedPackage } from '../../scripts/pack-packages.js';
import { runtimeAndMachine } from '../machine.js';

const root = packageRoot();
const versionOf = (name: string): string => JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version;
const seconds = (fn: () => void): number => {
  const started = performance.now();
  fn();
  return (performance.now() - started) / 1000;
};
const du = (dir: string): number => Number(execFileSync('du', ['-sk', dir], { encoding: 'utf8' }).split('\t')[0]) / 1024;
const tarball = (p: PackedPackage): string => `${(p.size / 1024).toFixed(0)} KiB (${(p.unpackedSize / 1024).toFixed(0)} KiB unpacked, ${p.entryCount} files)`;

const dir = mkdtempSync(join(tmpdir(), 'dkv-bench-package-'));
try {
  const packed = packPackages(dir);
  /** A fresh cdk8s app with the given tarballs, installed; its install time and node_modules size in MiB. */
  const app = (name: string, packages: PackedPackage[]): { at: string; seconds: number; mib: number } => {
    const at = join(dir, name);
    mkdirSync(at);
    const dependencies: Record<string, string> = { cdk8s: versionOf('cdk8s'), 'cdk8s-plus-27': versionOf('cdk8s-plus-27'), constructs: versionOf('constructs') };
    for (const p of packages) dependencies[p.name] = `file:${p.tarball}`;
    writeFileSync(join(at, 'package.json'), JSON.stringify({ name, private: true, type: 'module', dependencies }));
    const took = seconds(() => execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], { cwd: at, stdio: 'ignore' }));
    return { at, seconds: took, mib: du(join(at, 'node_modules')) };
  };
  const baseline = app('baseline-app', []);
  const library = app('shop-app', [packed.constructs]);
  const toolkit = app('ops-app', [packed.constructs, packed.toolkit]);
  writeFileSync(join(library.at, 'main.js'), `import { App, Chart } from 'cdk8s';
import { DistributedKVCluster } from '${packed.constructs.name}';
const app = new App();
DistributedKVCluster.fromDocument(new Chart(app, 'shop', { namespace: 'shop' }), 'orders',
  { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'orders' }, spec: { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0' } });
app.synth();
`);
  writeFileSync(join(library.at, 'cdk8s.yaml'), 'app: node main.js\noutput: dist\n');
  const synthSeconds = seconds(() => execFileSync(join(root, 'node_modules', '.bin', 'cdk8s'), ['synth', '--check-upgrade=false'], { cwd: library.at, stdio: 'ignore' }));
  const over = (installed: { mib: number }): string => `+${(installed.mib - baseline.mib).toFixed(1)} MiB over the baseline`;
  const rows: [string, string][] = [
    ['measured on', runtimeAndMachine()],
    ['baseline: a cdk8s app with cdk8s, cdk8s-plus-27, constructs alone', `node_modules ${baseline.mib.toFixed(1)} MiB, install ${baseline.seconds.toFixed(1)} s`],
    [`the same app with ${packed.constructs.name}`, `node_modules ${library.mib.toFixed(1)} MiB, install ${library.seconds.toFixed(1)} s`],
    ['  the construct library costs', `${over(library)} (target: within 10 MiB)`],
    [`the same app with ${packed.toolkit.name} (and the library), for comparison`, `node_modules ${toolkit.mib.toFixed(1)} MiB, install ${toolkit.seconds.toFixed(1)} s`],
    ['  the toolkit costs', over(toolkit)],
    [`${packed.constructs.name}@${packed.constructs.version} tarball`, tarball(packed.constructs)],
    [`${packed.toolkit.name}@${packed.toolkit.version} tarball`, tarball(packed.toolkit)],
    ['cdk8s synth of one cluster in the library\'s app', `${synthSeconds.toFixed(1)} s`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  for (const [k, v] of rows) process.stdout.write(`${k.padEnd(width)}  ${v}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
