/**
 * bench/controller: the reconciler on a local control plane, beside the floor.
 *
 *   converge   1,000 DistributedKVs created at once → time until every status
 *              reports its generation; the floor is one bulk server-side apply
 *              of the same objects from `dkv synth` output, no controller.
 *   requests   API requests the controller made per converged cluster.
 *   steady     writes per minute over a settled fleet (must be 0).
 *   drift      latency from an out-of-band `kubectl scale` to its correction, p50/p99 over 100 edits.
 *   rss        controller peak resident memory.
 *
 * Runs the generic engine (see `config` below). Prints figures; never fails on a timing. `npm run bench:controller [-- --clusters N --steady-seconds S]`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { loadDefaultConfig } from '../../api/config.js';
import { customResourceDefinition } from '../../api/crd.js';
import { packageRoot } from '../../api/package-root.js';
import { API_VERSION, KIND, validateDistributedKV } from '../../api/validate.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';
import { Informer } from '../../kube/informer.js';
import { KubeClient, resourcePath } from '../../kube/client.js';
import { MUTATING_VERBS, requestCounts, splitKey } from '../../test/cluster/apiserver-metrics.js';
import { startControlPlane } from '../../test/cluster/control-plane.js';
import { establishCrd } from '../../test/support/crds.js';
import { eventually, yes } from '../../test/support/eventually.js';
import { fleetSpec } from '../../test/support/fleet-specs.js';
import { httpProbe } from '../../test/support/http-probe.js';

const { values } = parseArgs({ options: { clusters: { type: 'string' }, 'steady-seconds': { type: 'string' }, 'drift-edits': { type: 'string' }, workers: { type: 'string' } } });
const CLUSTERS = Number(values.clusters ?? 1000);
const STEADY_SECONDS = Number(values['steady-seconds'] ?? 60);
const DRIFT_EDITS = Number(values['drift-edits'] ?? 100);
const WORKERS = values.workers ?? '8';
/**
 * The generic engine: no members run here (no kubelet), so the etcd engine's
 * membership step would only measure members that never answer. This bench
 * measures the drift-correcting core; test/integration/etcd-membership.test.ts
 * measures scaling with real members.
 */
const config = { ...loadDefaultConfig(), engine: 'generic' as const };
const configFile = join(mkdtempSync(join(tmpdir(), 'dkv-bench-')), 'dkv.config.yaml');
writeFileSync(configFile, 'engine: generic\n');

async function inParallel<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

function delta(after: Map<string, number>, before: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of after) if (v - (before.get(k) ?? 0) > 0) out.set(k, v - (before.get(k) ?? 0));
  return out;
}

/** CPU seconds (user + system) used so far by each named pid. */
function cpuSeconds(pids: Record<string, number>): Record<string, number> {
  const ticks = 100; // USER_HZ on Linux
  const out: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
      out[name] = (Number(fields[11]) + Number(fields[12])) / ticks;
    } catch {
      out[name] = NaN;
    }
  }
  return out;
}

function childPids(): Record<string, number> {
  const pids: Record<string, number> = {};
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = /\((.*)\)/.exec(stat)?.[1] ?? '';
      const ppid = Number(stat.replace(/^.*\) /, '').split(' ')[1]);
      if (ppid === process.pid && (comm === 'kube-apiserver' || comm === 'etcd')) pids[comm] = Number(entry);
    } catch {
      /* gone */
    }
  }
  return pids;
}

const cpuDelta = (after: Record<string, number>, before: Record<string, number>) =>
  Object.keys(after).map((k) => `${k} ${(after[k] - before[k]).toFixed(1)} s`).join(', ');

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

const plane = await startControlPlane();
const client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
try {
  await establishCrd(client, customResourceDefinition(config));
  for (const ns of ['floor', 'floor-seq', 'ctrl']) await client.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } });

  // Floor: the same objects applied in bulk, no controller.
  const objects = Array.from({ length: CLUSTERS }, (_, i) => {
    const result = validateDistributedKV({ apiVersion: API_VERSION, kind: KIND, metadata: { name: `kv-${i}`, namespace: 'floor' }, spec: fleetSpec(i, `kv-${i}`, 'bench') }, config);
    if (!result.valid) throw new Error(JSON.stringify(result.problems));
    return synthesizeCluster(result.resource, config);
  }).flat();
  const planePids = childPids();
  const floorCpuBefore = cpuSeconds({ ...planePids, bench: process.pid });
  let started = performance.now();
  await inParallel(objects, 16, (o) => client.apply(o, { fieldManager: 'bench-floor', force: true }));
  const floorMs = performance.now() - started;
  const floorCpu = cpuDelta(cpuSeconds({ ...planePids, bench: process.pid }), floorCpuBefore);
  // What `kubectl apply --server-side -f dist/` does: one object at a time.
  started = performance.now();
  for (const o of objects) await client.apply({ ...o, metadata: { ...o.metadata, namespace: 'floor-seq' } }, { fieldManager: 'bench-floor', force: true });
  const sequentialMs = performance.now() - started;

  // The controller, as its own process so its memory is its own.
  const child = spawn(process.execPath, [...(process.env.DKV_BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? []), join(packageRoot(), 'bin', 'dkv.js'), 'controller', '--kubeconfig', plane.kubeconfigPath, '--config', configFile, '--namespace', 'ctrl', '--leader-elect', 'false', '--health-addr', '127.0.0.1:0', '--webhook-addr', 'off', '--workers', WORKERS], { stdio: ['ignore', 'pipe', 'inherit'] });
  // Logs at info, as in production; the bench reads them only for the health port.
  const healthPort = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.includes('"healthPort"')) resolve(JSON.parse(line).healthPort);
    });
    child.once('exit', (code) => reject(new Error(`controller exited with ${code}`)));
  });
  const healthUrl = `http://127.0.0.1:${healthPort}`;
  await eventually('the controller to be ready', async () => yes((await httpProbe(`${healthUrl}/readyz`)).status === 200), 120_000);

  // Convergence is observed through a watch: polling a list of 1,000 clusters would cost the API server more than the controller does.
  const converged = new Set<string>();
  let markConverged: () => void = () => undefined;
  const allConverged = new Promise<void>((resolve) => (markConverged = resolve));
  const watcher = new Informer({
    client, apiVersion: API_VERSION, kind: KIND, path: resourcePath(API_VERSION, KIND, 'ctrl'),
    onEvent: (_type, cr) => {
      if (cr.status?.observedGeneration === cr.metadata.generation && cr.status?.generatedObjects?.every((o: { uid?: string }) => o.uid)) converged.add(cr.metadata.name);
      if (converged.size === CLUSTERS) markConverged();
    },
  });
  watcher.start();
  await watcher.hasSynced();
  const before = await requestCounts(client);
  const convergeCpuBefore = cpuSeconds({ ...planePids, controller: child.pid!, bench: process.pid });
  started = performance.now();
  await inParallel(Array.from({ length: CLUSTERS }, (_, i) => i), 16, (i) => client.request('POST', resourcePath(API_VERSION, KIND, 'ctrl'), { body: { apiVersion: API_VERSION, kind: KIND, metadata: { name: `kv-${i}`, namespace: 'ctrl' }, spec: fleetSpec(i, `kv-${i}`, 'bench') } }));
  const createdMs = performance.now() - started;
  await allConverged;
  const convergeMs = performance.now() - started;
  const convergeCpu = cpuDelta(cpuSeconds({ ...planePids, controller: child.pid!, bench: process.pid }), convergeCpuBefore);
  const used = delta(await requestCounts(client), before);
  // The bench's own requests: the creates (its watch is one long request).
  used.set(`POST distributedkvs`, (used.get('POST distributedkvs') ?? 0) - CLUSTERS);
  // ipaddresses are the API server's own ClusterIP allocations (the floor makes them too).
  const controllerRequests = [...used.entries()].filter(([k, v]) => v > 0 && !k.includes('leases') && !k.includes('ipaddresses'));
  const perCluster = controllerRequests.reduce((sum, [, v]) => sum + v, 0) / CLUSTERS;

  // Steady state.
  await watcher.stop();
  const steadyBefore = await requestCounts(client);
  await new Promise((r) => setTimeout(r, STEADY_SECONDS * 1000));
  const steadyByRequest = [...delta(await requestCounts(client), steadyBefore).entries()]
    .filter(([k, v]) => v > 0 && MUTATING_VERBS.has(splitKey(k).verb) && splitKey(k).resource !== 'leases');
  const steadyWrites = steadyByRequest.reduce((sum, [, v]) => sum + v, 0);
  // Which writes, when there are any: the figure must be 0, and a regression names itself.
  for (const [k, v] of steadyByRequest) process.stderr.write(`steady-state write: ${k} x${v}\n`);

  // Drift correction latency.
  const latencies: number[] = [];
  for (let e = 0; e < DRIFT_EDITS; e++) {
    const i = (e * 7) % CLUSTERS;
    const size = 1 + (i % 9);
    const path = resourcePath('apps/v1', 'StatefulSet', 'ctrl', `kv-${i}`);
    const t0 = performance.now();
    await client.request('PATCH', `${path}/scale`, { query: { fieldManager: 'kubectl' }, body: { spec: { replicas: size + 1 } }, contentType: 'application/merge-patch+json' });
    for (;;) {
      const sts = await client.request('GET', path);
      if (sts.spec.replicas === size) break;
      if (performance.now() - t0 > 30_000) throw new Error(`drift on kv-${i} not corrected in 30 s`);
      await new Promise((r) => setTimeout(r, 2));
    }
    latencies.push(performance.now() - t0);
  }

  const rssKb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0);
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));

  const row = (a: string, b: string, c: string, d = '') => console.log(`${a.padEnd(44)} ${b.padStart(12)} ${c.padStart(14)}   ${d}`);
  console.log(`\nbench/controller: ${CLUSTERS} clusters (sizes 1-9, half with backup, ${objects.length} objects), ${WORKERS} workers, on ${plane.server}`);
  row('figure', 'controller', 'floor/target', 'note');
  row('converge all (create → status current)', `${(convergeMs / 1000).toFixed(2)} s`, `${(floorMs / 1000).toFixed(2)} s`, `ratio ${(convergeMs / floorMs).toFixed(2)}x (target ≤ 1.5x); creating the CRs took ${(createdMs / 1000).toFixed(2)} s`);
  row('  against a sequential apply (kubectl-style)', '', `${(sequentialMs / 1000).toFixed(2)} s`, `ratio ${(convergeMs / sequentialMs).toFixed(2)}x`);
  row('API requests per converged cluster', perCluster.toFixed(2), `${(objects.length / CLUSTERS).toFixed(2)}`, 'floor: one apply per object');
  row('steady-state writes per minute', (steadyWrites * 60 / STEADY_SECONDS).toFixed(1), '0', `over ${STEADY_SECONDS} s, leases excluded`);
  row('drift correction p50', `${percentile(latencies, 50).toFixed(0)} ms`, '', `${latencies.length} kubectl-scale edits`);
  row('drift correction p99', `${percentile(latencies, 99).toFixed(0)} ms`, '< 1000 ms');
  row('controller peak RSS', `${(rssKb / 1024).toFixed(0)} MB`, '< 200 MB');
  console.log(`\nCPU during the floor:    ${floorCpu}`);
  console.log(`CPU during convergence: ${convergeCpu}  (2 cores: ${(2 * convergeMs / 1000).toFixed(1)} s available)`);
  console.log('\ncontroller requests by verb and resource:');
  for (const [k, v] of controllerRequests.sort()) console.log(`  ${k.padEnd(40)} ${String(v).padStart(7)}  (${(v / CLUSTERS).toFixed(2)}/cluster)`);
} finally {
  client.close();
  await plane.stop();
}
