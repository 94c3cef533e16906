/**
 * bench/controller: the reconciler on a local control plane (ShardedListAndWatch
 * on), a single leader and `--shards` sharded replicas side by side, beside two floors.
 *
 *   converge   1,000 DistributedKVs created at once → time until every status
 *              reports its generation. Floors, no controller: one bulk
 *              server-side apply of the same objects from `dkv synth` output,
 *              and the necessary writes (create the CR, apply its objects with
 *              the owner reference, one status write), in bulk.
 *   cpu        kube-apiserver's (and every process's) CPU seconds meanwhile.
 *   tail       when 50, 90 and 99% of the clusters had converged, and each replica's last
 *              reconcile: whether the last clusters wait on one replica or on everything.
 *   requests   API requests the controllers made per converged cluster.
 *   steady     writes per minute over a settled fleet (must be 0).
 *   drift      latency from an out-of-band `kubectl scale` to its correction, p50/p99 over 100 edits.
 *   rss        each controller process's peak resident memory, and its V8 heap and external memory (MB: 10^6 bytes).
 *   watch      bytes each controller process received on its watches.
 *
 * Each phase (the bulk floors, the necessary-writes floor, the single leader, the shards) runs on a control plane of its own.
 * `--rounds N` repeats the necessary-writes floor, the single leader and the shards N times, every
 * other round in reverse order (floor, single, shards; shards, single, floor; …): this machine's
 * speed drifts by a quarter between runs, and a ratio taken against the floor of the same round,
 * with the order mirrored, does not take that drift for the controller's cost.
 * Runs the generic engine (see `config` below). Prints figures; never fails on a timing.
 * Each controller process runs with the install bundle's environment (CONTROLLER_PROCESS_ENV:
 * V8's young generation, glibc's arenas), so its memory and CPU are those of what is deployed;
 * DKV_BENCH_NODE_FLAGS adds node flags (on the command line, they win over NODE_OPTIONS).
 * The controllers, and the floors' writes, authenticate as the bundle's ServiceAccount with its
 * RBAC, by token, as deployed (service-account.ts); the bench itself (creating the clusters,
 * reading their status, kubectl-style edits) uses the plane's admin certificate.
 * `--same-requests-floor` adds, to each round, the requests the single leader makes beyond the
 * necessary writes (the finalizer of a cluster with backups created without it, the Event), made in bulk the same
 * way: what is left between it and the single leader is the controller's own machinery (watches,
 * queue, reconciles sharing the cores). Shards make the same requests (nothing is read before a create).
 * Every plane runs the bundle's final-backup finalizer policy (`dkv install --finalizer-policy`,
 * the install a fleet this size is told to use): a cluster with backups is created with its
 * finalizer, in the controllers' phases and the floors' alike; `--without-finalizer-policy`
 * leaves it out, and the controllers add the finalizer with a write of their own.
 * `npm run bench:controller [-- --clusters N --steady-seconds S --drift-edits N --shards N --workers N --rounds N
 *   --same-requests-floor --without-finalizer-policy --skip-sequential --single-only --apiserver-profile DIR]`.
 */
import { spawn } from 'node:child_process';
import { request as httpsRequest } from 'node:https';
import { createWriteStream, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { loadDefaultConfig } from '../../api/config.js';
import { customResourceDefinition } from '../../api/crd.js';
import { packageRoot } from '../../api/package-root.js';
import { API_VERSION, KIND, validateDistributedKV } from '../../api/validate.js';
import { CONTROLLER_PROCESS_ENV } from '../../constructs/install/controller-deployment.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';
import type { KubeObject } from '../../model/kube-object.js';
import { Informer } from '../../kube/informer.js';
import { KubeClient, resourcePath } from '../../kube/client.js';
import { realClock } from '../../kube/clock.js';
import { silentLogger } from '../../kube/log.js';
import { EventRecorder } from '../../reconciler/process/events.js';
import { MUTATING_VERBS, admissionSeconds, requestCounts, splitKey } from '../../test/cluster/apiserver-metrics.js';
import { startControlPlane, type ControlPlane } from '../../test/cluster/control-plane.js';
import { establishCrd } from '../../test/support/crds.js';
import { eventually, yes } from '../../test/support/eventually.js';
import { applyFinalizerPolicy } from '../../test/support/finalizer-policy.js';
import { fleetSpec } from '../../test/support/fleet-specs.js';
import { inParallel } from '../../test/support/in-parallel.js';
import { httpProbe } from '../../test/support/http-probe.js';
import { bundleIdentity, type BundleIdentity } from './service-account.js';
import { runtimeAndMachine } from '../machine.js';

const { values } = parseArgs({ options: { clusters: { type: 'string' }, 'steady-seconds': { type: 'string' }, 'drift-edits': { type: 'string' }, workers: { type: 'string' }, shards: { type: 'string' }, 'skip-sequential': { type: 'boolean' }, 'single-only': { type: 'boolean' }, 'apiserver-profile': { type: 'string' }, rounds: { type: 'string' }, 'same-requests-floor': { type: 'boolean' }, 'without-finalizer-policy': { type: 'boolean' } } });
const CLUSTERS = Number(values.clusters ?? 1000);
const STEADY_SECONDS = Number(values['steady-seconds'] ?? 60);
const DRIFT_EDITS = Number(values['drift-edits'] ?? 100);
const WORKERS = values.workers ?? '8';
const SHARDS = Number(values.shards ?? 3);
const ROUNDS = Math.max(1, Math.floor(Number(values.rounds ?? 1)));
/** Adds a third floor to each round: the controller's own requests in bulk (see runNecessaryFloor). */
const SAME_REQUESTS_FLOOR = Boolean(values['same-requests-floor']);
/** `dkv install --finalizer-policy` on every plane (see the header). */
const FINALIZER_POLICY = !values['without-finalizer-policy'];
/** A folder to write kube-apiserver's CPU profile of each phase's convergence into. */
const PROFILE_DIR = values['apiserver-profile'];
/** Under kube-apiserver's 60 s timeout for a request that is not a watch. */
const PROFILE_SECONDS = 20;
/**
 * The generic engine: no members run here (no kubelet), so the etcd engine's
 * membership step would only measure members that never answer. This bench
 * measures the drift-correcting core; test/integration/etcd-membership.test.ts
 * measures scaling with real members.
 */
const config = { ...loadDefaultConfig(), engine: 'generic' as const };
const configFile = join(mkdtempSync(join(tmpdir(), 'dkv-bench-')), 'dkv.config.yaml');
writeFileSync(configFile, 'engine: generic\n');

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

/** A memory figure of /proc/<pid>/status, kB (VmRSS: resident now; VmHWM: its peak). */
const procStatusKb = (pid: number, field: 'VmRSS' | 'VmHWM'): number => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);

const cpuDelta = (after: Record<string, number>, before: Record<string, number>) =>
  Object.keys(after).map((k) => `${k} ${(after[k] - before[k]).toFixed(1)} s`).join(', ');

/**
 * With --apiserver-profile: kube-apiserver's CPU profile (Go's pprof, served
 * while --profiling is on, its default) from now until `stop()`, in windows of
 * PROFILE_SECONDS written to `<dir>/<phase>-<n>.pprof` (`go tool pprof -top
 * <dir>/<phase>-*.pprof` adds them up). Tells which of kube-apiserver's work
 * a phase costs (admission, server-side apply, etcd, authentication, watch
 * serving), which request counts alone cannot. The last window ends up to
 * PROFILE_SECONDS after `stop()`.
 */
function profileApiServer(name: string): { stop(): Promise<void> } {
  if (!PROFILE_DIR) return { stop: async () => undefined };
  const phase = ROUNDS > 1 ? `${name}-round${roundUnderWay}` : name;
  mkdirSync(PROFILE_DIR, { recursive: true });
  const tls = { cert: readFileSync(join(plane.dir, 'pki', 'admin.crt')), key: readFileSync(join(plane.dir, 'pki', 'admin.key')), ca: readFileSync(join(plane.dir, 'pki', 'ca.crt')) };
  const window = (file: string) => new Promise<void>((resolve, reject) => {
    const req = httpsRequest(`${plane.server}/debug/pprof/profile?seconds=${PROFILE_SECONDS}`, tls, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`kube-apiserver profile: HTTP ${res.statusCode}`));
      res.pipe(createWriteStream(file)).on('finish', resolve);
    });
    req.on('error', reject);
    req.end();
  });
  let running = true;
  const windows = (async () => {
    for (let n = 1; running; n++) await window(join(PROFILE_DIR, `${phase}-${n}.pprof`));
    process.stderr.write(`kube-apiserver CPU profile of ${phase}: go tool pprof -top ${join(PROFILE_DIR, `${phase}-*.pprof`)}\n`);
  })().catch((e: Error) => {
    // A diagnostic: the figures stand without it.
    process.stderr.write(`kube-apiserver CPU profile of ${phase} stopped: ${e.message}\n`);
  });
  return { stop: async () => { running = false; await windows; } };
}

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

interface ControllerRun {
  readonly convergeMs: number;
  readonly apiserverCpu: number;
  readonly cpu: string;
  readonly perCluster: number;
  /** Reconciles until convergence, all replicas together: success, error, terminal. */
  readonly reconciles: number[];
  readonly requests: [string, number][];
  readonly steadyPerMinute: number;
  readonly rssKb: number[];
  /** Each replica's resident memory once ready (and, sharded, holding its share), before the first cluster: what a replica costs with nothing to do. */
  readonly idleRssKb: number[];
  readonly watchBytes: number[];
  readonly cached: number[];
  readonly serverFiltered: string[];
  readonly latencies: number[];
  /** Each replica's largest V8 heap (total, used) and external memory seen during convergence, bytes. */
  readonly memory: { heapTotal: number; heapUsed: number; external: number }[];
  /** Each replica's V8 heap in use after the steady period: what V8 still holds once the fleet settled (the live set plus what it has not collected). */
  readonly settledHeapUsed: number[];
  /** Each replica's watch restarts by reason (a 410 Gone costs a relist). */
  readonly watchRestarts: string[];
  /** kube-apiserver's seconds in the MutatingAdmissionPolicy plugin and serving mutating requests, during convergence (admissionSeconds). */
  readonly admission: { plugin: number; mutatingRequests: number };
  /** When each cluster's status first showed it converged, ms from the first create: the shape of the tail. */
  readonly convergedAtMs: number[];
  /** Each replica's last successful reconcile during convergence, ms from the first create (sampled each second): a replica that finishes last holds the tail. */
  readonly lastReconcileMs: number[];
}

function metricValue(text: string, name: string, labels = ''): number {
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) if (line.includes(labels)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

/**
 * `replicas` controller processes (each its own process, so its memory is
 * its own) over a fresh namespace: CLUSTERS DistributedKVs created at
 * once, time until every status is current, requests, steady-state
 * writes, and (single leader) drift correction.
 */
async function runControllers(namespace: string, replicas: number, shards: boolean, planePids: Record<string, number>): Promise<ControllerRun> {
  await client.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } } });
  const children = Array.from({ length: replicas }, (_, r) => spawn(process.execPath, [
    ...(process.env.DKV_BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? []), join(packageRoot(), 'bin', 'dkv.js'), 'controller', '--kubeconfig', identity.kubeconfigPath,
    '--config', configFile, '--namespace', namespace, '--health-addr', '127.0.0.1:0', '--webhook-addr', 'off', '--workers', WORKERS,
    ...(shards ? ['--shards', 'auto', '--identity', `${namespace}-${r}`, '--leader-election-namespace', identity.namespace] : ['--leader-elect', 'false']),
  ], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...CONTROLLER_PROCESS_ENV } }));
  // Logs at info, as in production; the bench reads them only for the health port.
  const healthUrls = await Promise.all(children.map((child) => new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.includes('"healthPort"')) resolve(`http://127.0.0.1:${JSON.parse(line).healthPort}`);
    });
    child.once('exit', (code) => reject(new Error(`controller exited with ${code}`)));
  })));
  await Promise.all(healthUrls.map((url) => eventually('the controller to be ready', async () => yes((await httpProbe(`${url}/readyz`)).status === 200), 120_000)));
  if (shards) {
    // Every replica has taken its share before the clusters arrive (what a running deployment looks like).
    await eventually('the shards to share the buckets', async () => {
      const buckets = await Promise.all(healthUrls.map(async (url) => metricValue(await (await fetch(`${url}/metrics`)).text(), 'dkv_shard_buckets')));
      return buckets.every((b) => b > 0) && buckets.reduce((a, b) => a + b, 0) === loadDefaultConfig().sharding.buckets ? true : undefined;
    }, 60_000, 200);
  }

  const idleRssKb = children.map((child) => procStatusKb(child.pid!, 'VmRSS'));

  // Convergence is observed through a watch: polling a list of every cluster would cost the API server more than the controller does.
  const converged = new Set<string>();
  const convergedAtMs: number[] = [];
  let started = 0;
  let markConverged: () => void = () => undefined;
  const allConverged = new Promise<void>((resolve) => (markConverged = resolve));
  const watcher = new Informer({
    client, apiVersion: API_VERSION, kind: KIND, path: resourcePath(API_VERSION, KIND, namespace),
    onEvent: (_type, cr) => {
      if (cr.status?.observedGeneration === cr.metadata.generation && cr.status?.generatedObjects?.every((o: { uid?: string }) => o.uid) && !converged.has(cr.metadata.name)) {
        converged.add(cr.metadata.name);
        convergedAtMs.push(performance.now() - started);
      }
      if (converged.size === CLUSTERS) markConverged();
    },
  });
  watcher.start();
  await watcher.hasSynced();
  const pids = Object.fromEntries(children.map((c, r) => [`controller-${r}`, c.pid!]));
  const before = await requestCounts(client);
  const admissionBefore = await admissionSeconds(client, 'MutatingAdmissionPolicy');
  const cpuBefore = cpuSeconds({ ...planePids, ...pids, bench: process.pid });
  // Where the resident memory goes: each replica's heap and external memory, sampled during convergence.
  const memory = healthUrls.map(() => ({ heapTotal: 0, heapUsed: 0, external: 0 }));
  const reconciled = healthUrls.map(() => 0);
  const lastReconcileMs = healthUrls.map(() => 0);
  const sampleMemory = async () => Promise.all(healthUrls.map(async (url, r) => {
    const text = await (await fetch(`${url}/metrics`)).text();
    const successes = metricValue(text, 'dkv_reconcile_total', 'result="success"');
    if (successes > reconciled[r]) [reconciled[r], lastReconcileMs[r]] = [successes, performance.now() - started];
    const m = memory[r];
    m.heapTotal = Math.max(m.heapTotal, metricValue(text, 'dkv_nodejs_heap_size_total_bytes'));
    m.heapUsed = Math.max(m.heapUsed, metricValue(text, 'dkv_nodejs_heap_size_used_bytes'));
    m.external = Math.max(m.external, metricValue(text, 'dkv_nodejs_external_memory_bytes'));
  }));
  let sampling = true;
  const profiled = profileApiServer(shards ? 'shards' : 'single-leader');
  started = performance.now();
  const sampler = (async () => {
    for (let n = 1; sampling; n++) {
      // A sample lost to a busy replica (a reset keep-alive connection) is skipped, not fatal.
      await sampleMemory().catch(() => undefined);
      if (n % 60 === 0) process.stderr.write(`${namespace}: ${converged.size} of ${CLUSTERS} converged after ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  })();
  await inParallel(Array.from({ length: CLUSTERS }, (_, i) => i), 16, (i) => client.request('POST', resourcePath(API_VERSION, KIND, namespace), { body: { apiVersion: API_VERSION, kind: KIND, metadata: { name: `kv-${i}`, namespace }, spec: fleetSpec(i, `kv-${i}`, 'bench', config.engine) } }));
  await allConverged;
  const convergeMs = performance.now() - started;
  sampling = false;
  await sampler;
  const cpuAfter = cpuSeconds({ ...planePids, ...pids, bench: process.pid });
  await profiled.stop();
  // How often each cluster was reconciled on the way (more than once: repeated work; errors: retries after a backoff that starts at seconds).
  const afterConvergence = await Promise.all(healthUrls.map(async (url) => (await fetch(`${url}/metrics`)).text()));
  const reconciles = ['success', 'error', 'terminal'].map((result) => afterConvergence.reduce((sum, text) => sum + metricValue(text, 'dkv_reconcile_total', `result="${result}"`), 0));
  const used = delta(await requestCounts(client), before);
  const admissionAfter = await admissionSeconds(client, 'MutatingAdmissionPolicy');
  const admission = { plugin: admissionAfter.plugin - admissionBefore.plugin, mutatingRequests: admissionAfter.mutatingRequests - admissionBefore.mutatingRequests };
  // The bench's own requests: the creates (its watch is one long request).
  used.set('POST distributedkvs', (used.get('POST distributedkvs') ?? 0) - CLUSTERS);
  // ipaddresses are the API server's own ClusterIP allocations (the floor makes them too).
  const requests = [...used.entries()].filter(([k, v]) => v > 0 && !k.includes('leases') && !k.includes('ipaddresses'));
  const perCluster = requests.reduce((sum, [, v]) => sum + v, 0) / CLUSTERS;

  // Steady state.
  await watcher.stop();
  const steadyBefore = await requestCounts(client);
  await new Promise((r) => setTimeout(r, STEADY_SECONDS * 1000));
  const steadyByRequest = [...delta(await requestCounts(client), steadyBefore).entries()]
    .filter(([k, v]) => v > 0 && MUTATING_VERBS.has(splitKey(k).verb) && splitKey(k).resource !== 'leases');
  const steadyWrites = steadyByRequest.reduce((sum, [, v]) => sum + v, 0);
  // Which writes, when there are any: the figure must be 0, and a regression names itself.
  for (const [k, v] of steadyByRequest) process.stderr.write(`steady-state write (${namespace}): ${k} x${v}\n`);

  // Drift correction latency (the single leader only: sharding changes who corrects, not how).
  const latencies: number[] = [];
  for (let e = 0; !shards && e < DRIFT_EDITS; e++) {
    const i = (e * 7) % CLUSTERS;
    const size = 1 + (i % 9);
    const path = resourcePath('apps/v1', 'StatefulSet', namespace, `kv-${i}`);
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

  const scraped = await Promise.all(healthUrls.map(async (url) => (await fetch(`${url}/metrics`)).text()));
  const settledHeapUsed = scraped.map((text) => metricValue(text, 'dkv_nodejs_heap_size_used_bytes'));
  const rssKb = children.map((child) => procStatusKb(child.pid!, 'VmHWM'));
  for (const child of children) child.kill('SIGTERM');
  await Promise.all(children.map((child) => new Promise((r) => child.once('exit', r))));
  return {
    convergeMs, latencies, perCluster, requests, reconciles, rssKb, idleRssKb, memory, settledHeapUsed, admission, convergedAtMs, lastReconcileMs,
    watchRestarts: scraped.map((text) => ['gone', 'idle', 'error'].map((reason) => `${reason} ${metricValue(text, 'dkv_watch_restarts_total', `reason="${reason}"`)}`).join(', ')),
    apiserverCpu: cpuAfter['kube-apiserver'] - cpuBefore['kube-apiserver'],
    cpu: cpuDelta(cpuAfter, cpuBefore),
    steadyPerMinute: steadyWrites * 60 / STEADY_SECONDS,
    watchBytes: scraped.map((text) => metricValue(text, 'dkv_watch_received_bytes_total')),
    cached: scraped.map((text) => metricValue(text, 'dkv_cache_objects', 'kind="DistributedKV"')),
    serverFiltered: scraped.map((text) => (shards ? (metricValue(text, 'dkv_shard_server_filtered') === 1 ? 'yes' : 'no') : '-')),
  };
}

interface BulkFloors {
  readonly objects: number;
  readonly bulkMs: number;
  readonly bulkCpu: string;
  readonly sequentialMs: number;
}

interface NecessaryFloor {
  readonly necessaryMs: number;
  readonly necessaryApiserverCpu: number;
  readonly necessaryCpu: string;
}

/** Each cluster's objects as `dkv synth` writes them. */
function synthesizedFleet(): KubeObject[][] {
  return Array.from({ length: CLUSTERS }, (_, i) => {
    const result = validateDistributedKV({ apiVersion: API_VERSION, kind: KIND, metadata: { name: `kv-${i}`, namespace: 'floor' }, spec: fleetSpec(i, `kv-${i}`, 'bench', config.engine) }, config);
    if (!result.valid) throw new Error(JSON.stringify(result.problems));
    return synthesizeCluster(result.resource, config);
  });
}

/** Floors, no controller: the fleet's objects applied in bulk, and (unless skipped) one at a time. */
async function runBulkFloors(planePids: Record<string, number>): Promise<BulkFloors> {
  for (const ns of ['floor', 'floor-seq']) await client.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } });
  const objects = synthesizedFleet().flat();
  const floorCpuBefore = cpuSeconds({ ...planePids, bench: process.pid });
  let started = performance.now();
  await inParallel(objects, 16, (o) => identity.client.apply(o, { fieldManager: 'bench-floor', force: true }));
  const floorMs = performance.now() - started;
  const floorCpu = cpuDelta(cpuSeconds({ ...planePids, bench: process.pid }), floorCpuBefore);
  // What `kubectl apply --server-side -f dist/` does: one object at a time.
  // (--skip-sequential: at 10,000 clusters it alone takes many minutes and is context, not a target.)
  started = performance.now();
  if (!values['skip-sequential']) for (const o of objects) await identity.client.apply({ ...o, metadata: { ...o.metadata, namespace: 'floor-seq' } }, { fieldManager: 'bench-floor', force: true });
  const sequentialMs = values['skip-sequential'] ? NaN : performance.now() - started;
  return { objects: objects.length, bulkMs: floorMs, bulkCpu: floorCpu, sequentialMs };
}

/**
 * The floor the controller is held to: exactly the writes a cluster needs, in
 * bulk, no controller: its objects applied (with the owner reference the
 * controller sets) and one status write. The CRs are created the same way as
 * for the controller, inside the timed window.
 *
 * With `sameRequests`, every request the single leader makes per cluster, in
 * the same bulk: also the final-backup finalizer of a cluster with backups
 * when it was not created with it (as the controller: only without the
 * finalizer policy), and the Normal Event that names what was created. The
 * controller reads nothing before a first write: it creates each object only
 * if absent (reconciler/core/create-if-absent.ts), the same apply with a
 * precondition, which the floor's plain apply stands for.
 */
async function runNecessaryFloor(planePids: Record<string, number>, sameRequests = false): Promise<NecessaryFloor> {
  const namespace = sameRequests ? 'floor-requests' : 'floor-writes';
  await client.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } } });
  const objectsByCluster = synthesizedFleet();
  // The controller's own recorder, so the Event is the request the controller makes.
  const eventFailures: string[] = [];
  const writer = identity.client;
  const events = new EventRecorder(writer, 'bench-floor', { ...silentLogger, warn: (message, fields) => eventFailures.push(`${message} ${JSON.stringify(fields)}`) }, realClock);
  const necessaryCpuBefore = cpuSeconds({ ...planePids, bench: process.pid });
  const profiled = profileApiServer(sameRequests ? 'same-requests-floor' : 'necessary-writes-floor');
  const started = performance.now();
  await inParallel(Array.from({ length: CLUSTERS }, (_, i) => i), 16, async (i) => {
    const name = `kv-${i}`;
    const spec = fleetSpec(i, name, 'bench', config.engine);
    const cr = await client.request('POST', resourcePath(API_VERSION, KIND, namespace), { body: { apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace }, spec } });
    const owner = { apiVersion: API_VERSION, kind: KIND, name, uid: cr.metadata.uid, controller: true, blockOwnerDeletion: true };
    const mine = objectsByCluster[i].map((o) => ({ ...o, metadata: { ...o.metadata, namespace, ownerReferences: [owner] } }));
    const applied = await Promise.all(mine.map((o) => writer.apply(o, { fieldManager: 'bench-floor', force: true })));
    if (sameRequests && spec.backup && !(cr.metadata.finalizers ?? []).includes(config.backup.final.finalizer)) {
      await writer.apply({ apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace, uid: cr.metadata.uid, finalizers: [config.backup.final.finalizer] } }, { fieldManager: 'bench-floor' });
    }
    const status = await writer.request('PATCH', `${resourcePath(API_VERSION, KIND, namespace, name)}/status`, {
      contentType: 'application/merge-patch+json',
      body: { status: {
        observedGeneration: cr.metadata.generation,
        generatedObjects: applied.map((a: any) => ({ apiVersion: a.apiVersion, kind: a.kind, name: a.metadata.name, uid: a.metadata.uid, hash: a.metadata.annotations?.[config.hashAnnotation] })),
        conditions: [{ type: 'Ready', status: 'False', reason: 'MembersNotReady', message: 'no members ready', lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), observedGeneration: cr.metadata.generation }],
      } },
    });
    if (sameRequests) {
      await events.record({ apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace, uid: cr.metadata.uid, resourceVersion: status.metadata.resourceVersion } },
        'Normal', 'Created', `created ${applied.map((a: any) => `${a.kind}/${a.metadata.name}`).join(', ')}`);
    }
  });
  // The recorder never fails a reconcile, so it reports a failed Event only to its logger: here that fails the phase.
  if (eventFailures.length > 0) throw new Error(`the same-requests floor: ${eventFailures.length} Events failed, the first: ${eventFailures[0]}`);
  const necessaryMs = performance.now() - started;
  const necessaryCpuAfter = cpuSeconds({ ...planePids, bench: process.pid });
  await profiled.stop();

  return {
    necessaryMs,
    necessaryApiserverCpu: necessaryCpuAfter['kube-apiserver'] - necessaryCpuBefore['kube-apiserver'],
    necessaryCpu: cpuDelta(necessaryCpuAfter, necessaryCpuBefore),
  };
}

/** The control plane (and a client of it) the phase under way runs on. */
let plane: ControlPlane;
let client: KubeClient;
/** Who the controllers and the floors' writes authenticate as on that plane: the bundle's ServiceAccount. */
let identity: BundleIdentity;

/**
 * Runs one phase on a control plane of its own, stopped after it. On a shared
 * one each phase would pay for the objects the phases before it left (at
 * 10,000 clusters the floors leave over 100,000: the single leader then
 * converged at half the rate it has on an empty plane), and the phase run last
 * would look the most expensive whatever it did.
 */
async function onFreshPlane<T>(phase: (planePids: Record<string, number>) => Promise<T>): Promise<T> {
  plane = await startControlPlane(undefined, { apiServerFlags: ['--feature-gates=ShardedListAndWatch=true'] });
  client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
  try {
    await establishCrd(client, customResourceDefinition(config));
    identity = await bundleIdentity(client, plane);
    if (FINALIZER_POLICY) await applyFinalizerPolicy(client, 'default');
    return await phase(childPids());
  } finally {
    identity?.client.close();
    client.close();
    await plane.stop();
  }
}

interface Round {
  readonly necessary?: NecessaryFloor;
  /** With --same-requests-floor. */
  readonly sameRequests?: NecessaryFloor;
  readonly single: ControllerRun;
  readonly sharded?: ControllerRun;
}

/** The round under way (1-based): names the profiles of its phases. */
let roundUnderWay = 1;

/** One round: the necessary-writes floor, the single leader and the shards, each on a fresh plane, in the order given. */
async function runRound(reversed: boolean, singleOnly: boolean): Promise<Round> {
  const phases = [
    ...(singleOnly ? [] : ['floor' as const]),
    ...(singleOnly || !SAME_REQUESTS_FLOOR ? [] : ['same-requests' as const]),
    'single' as const,
    ...(singleOnly ? [] : ['sharded' as const]),
  ];
  const round: { necessary?: NecessaryFloor; sameRequests?: NecessaryFloor; single?: ControllerRun; sharded?: ControllerRun } = {};
  for (const phase of reversed ? phases.reverse() : phases) {
    if (phase === 'floor') round.necessary = await onFreshPlane((pids) => runNecessaryFloor(pids));
    if (phase === 'same-requests') round.sameRequests = await onFreshPlane((pids) => runNecessaryFloor(pids, true));
    if (phase === 'single') round.single = await onFreshPlane((pids) => runControllers('ctrl', 1, false, pids));
    if (phase === 'sharded') round.sharded = await onFreshPlane((pids) => runControllers('shards', SHARDS, true, pids));
  }
  return { ...round, single: round.single! };
}

/** The figures of one round (with the bulk floors, run once before the first). */
function printRound(r: number, { necessary, sameRequests, single, sharded }: Round, bulk: BulkFloors | undefined): void {
  const floors = bulk && necessary ? { ...bulk, ...necessary } : undefined;
  const order = ['floor', ...(sameRequests ? ['the same requests'] : []), 'single leader', 'shards'];
  if (ROUNDS > 1) console.log(`\n=== round ${r + 1} of ${ROUNDS} (${(r % 2 === 1 ? order.reverse() : order).join(', ')}; the bulk floors ran once, first)`);
  const row = (a: string, b: string, c = '', d = '', e = '') => console.log(`${a.padEnd(44)} ${b.padStart(14)} ${c.padStart(20)} ${d.padStart(16)}   ${e}`);
  const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;
  const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const ratio = (ms: number, floorMs: number) => `${(ms / floorMs).toFixed(2)}x`;
  const each = (f: (run: ControllerRun) => string) => (sharded ? f(sharded) : '-');
  console.log(`\nbench/controller: ${CLUSTERS} clusters (sizes 1-9, half with backup), ${WORKERS} workers per replica, ShardedListAndWatch on, each phase on a control plane of its own, ${FINALIZER_POLICY ? 'with' : 'without'} the final-backup finalizer policy; ${runtimeAndMachine()}`);
  row('figure', 'single leader', `${SHARDS} shards (each)`, 'floor/target', 'note');
  row('converge all (create → status current)', seconds(single.convergeMs), each((r) => seconds(r.convergeMs)), floors ? seconds(floors.necessaryMs) : '-',
    floors ? `necessary-writes floor (target ≤ 1.3x): ${ratio(single.convergeMs, floors.necessaryMs)} / ${each((r) => ratio(r.convergeMs, floors.necessaryMs))}; bulk apply alone ${seconds(floors.bulkMs)}` : '');
  row('  kube-apiserver CPU during it', `${single.apiserverCpu.toFixed(1)} s`, each((r) => `${r.apiserverCpu.toFixed(1)} s`), floors ? `${floors.necessaryApiserverCpu.toFixed(1)} s` : '-', 'the floor\'s own; 2 cores');
  if (sameRequests) {
    row('  the same requests in bulk, no controller', '', '', seconds(sameRequests.necessaryMs),
      `${ratio(single.convergeMs, sameRequests.necessaryMs)} / ${each((r) => ratio(r.convergeMs, sameRequests.necessaryMs))}: the rest is the controller's machinery; kube-apiserver ${sameRequests.necessaryApiserverCpu.toFixed(1)} s CPU`);
  }
  if (floors && !Number.isNaN(floors.sequentialMs)) {
    row('  against a sequential apply (kubectl-style)', '', '', seconds(floors.sequentialMs), `ratio ${ratio(single.convergeMs, floors.sequentialMs)} / ${each((r) => ratio(r.convergeMs, floors.sequentialMs))}`);
  }
  if (FINALIZER_POLICY) {
    const admissionShare = (run: ControllerRun) => `${run.admission.plugin.toFixed(2)} s, ${(100 * run.admission.plugin / run.admission.mutatingRequests).toFixed(2)}%`;
    row('  in the finalizer policy\'s admission', admissionShare(single), each(admissionShare), '', 'kube-apiserver\'s own histograms: its time in MutatingAdmissionPolicy, share of its time serving writes');
  }
  const tail = (r: ControllerRun) => [50, 90, 99].map((p) => seconds(percentile(r.convergedAtMs, p))).join(' / ');
  row('  clusters converged by: 50 / 90 / 99%', tail(single), each(tail), '', 'a long last tenth is a tail, not a rate');
  row('  each replica\'s last reconcile', seconds(single.lastReconcileMs[0]), each((r) => r.lastReconcileMs.map(seconds).join(' / ')), '', 'sampled each second: the replica that finishes last holds the tail');
  row('API requests per converged cluster', single.perCluster.toFixed(2), each((r) => r.perCluster.toFixed(2)), floors ? `${(floors.objects / CLUSTERS + 1).toFixed(2)}` : '-', 'floor: one apply per object and one status write');
  const perClusterReconciles = (run: ControllerRun) => run.reconciles.map((n) => (n / CLUSTERS).toFixed(2)).join(' / ');
  row('reconciles per cluster: success / error / terminal', perClusterReconciles(single), each(perClusterReconciles), '', 'until convergence, all replicas');
  row('steady-state writes per minute', single.steadyPerMinute.toFixed(1), each((r) => r.steadyPerMinute.toFixed(1)), '0', `over ${STEADY_SECONDS} s, leases excluded`);
  row('peak RSS per replica', mb(single.rssKb[0] * 1024), each((r) => r.rssKb.map((kb) => mb(kb * 1024)).join(' / ')), '',
    each((r) => `shards: max ${(100 * Math.max(...r.rssKb) / single.rssKb[0]).toFixed(0)}% of the single leader (target < 45%)`));
  row('  RSS once ready, before the first cluster', mb(single.idleRssKb[0] * 1024), each((r) => r.idleRssKb.map((kb) => mb(kb * 1024)).join(' / ')), '',
    each((r) => `shards: ${(100 * Math.max(...r.idleRssKb) / single.rssKb[0]).toFixed(0)}% of the single leader's peak with nothing to do`));
  row('  of it: V8 heap, peak total / used', single.memory.map((m) => `${mb(m.heapTotal)} / ${mb(m.heapUsed)}`).join(''), each((r) => r.memory.map((m) => mb(m.heapTotal)).join(' / ')), '', 'sampled each second during convergence');
  row('  V8 heap used once settled', mb(single.settledHeapUsed[0]), each((r) => r.settledHeapUsed.map(mb).join(' / ')), '', 'after the steady period: live set plus what V8 has not collected');
  row('  of it: external (buffers), peak', mb(single.memory[0].external), each((r) => r.memory.map((m) => mb(m.external)).join(' / ')));
  row('watch bytes received per replica', `${(single.watchBytes[0] / 1e6).toFixed(1)} MB`, each((r) => r.watchBytes.map((b) => `${(b / 1e6).toFixed(1)}`).join(' / ') + ' MB'), '',
    each((r) => `shards: max ${(100 * Math.max(...r.watchBytes) / single.watchBytes[0]).toFixed(0)}% (target < 45%)`));
  row('watch restarts per replica', single.watchRestarts[0], each((r) => r.watchRestarts.join(' / ')));
  row('DistributedKVs cached per replica', String(single.cached[0]), each((r) => r.cached.join(' / ')), '', each((r) => `shardSelector filtered by the API server: ${r.serverFiltered.join(' / ')}`));
  row('drift correction p50', `${percentile(single.latencies, 50).toFixed(0)} ms`, '', '', `${single.latencies.length} kubectl-scale edits`);
  row('drift correction p99', `${percentile(single.latencies, 99).toFixed(0)} ms`, '', '< 1000 ms');
  if (floors) {
    console.log(`\nCPU during the bulk-apply floor:       ${floors.bulkCpu}`);
    console.log(`CPU during the necessary-writes floor: ${floors.necessaryCpu}`);
  }
  if (sameRequests) console.log(`CPU during the same requests in bulk:  ${sameRequests.necessaryCpu}`);
  console.log(`CPU during convergence, single leader: ${single.cpu}  (2 cores: ${(2 * single.convergeMs / 1000).toFixed(1)} s available)`);
  if (sharded) console.log(`CPU during convergence, ${SHARDS} shards:      ${sharded.cpu}  (2 cores: ${(2 * sharded.convergeMs / 1000).toFixed(1)} s available)`);
  for (const [label, run] of [['single leader', single], [`${SHARDS} shards`, sharded]] as const) {
    if (!run) continue;
    console.log(`\n${label}: controller requests by verb and resource:`);
    for (const [k, v] of run.requests.sort()) console.log(`  ${k.padEnd(40)} ${String(v).padStart(7)}  (${(v / CLUSTERS).toFixed(2)}/cluster)`);
  }
}

{
  // --single-only: the single leader alone (a quick look at the controller's own figures, without the floors and shards).
  const singleOnly = Boolean(values['single-only']);
  const bulk = singleOnly ? undefined : await onFreshPlane(runBulkFloors);
  const rounds: Round[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    roundUnderWay = r + 1;
    rounds.push(await runRound(r % 2 === 1, singleOnly));
  }
  for (const [r, round] of rounds.entries()) printRound(r, round, bulk);
  if (rounds.length > 1 && !singleOnly) {
    // Each controller phase against the floor of its own round; then all rounds' times summed, which with mirrored orders cancels a steady drift.
    const sum = (f: (round: Round) => number) => rounds.reduce((total, round) => total + f(round), 0);
    const floorSum = sum((round) => round.necessary!.necessaryMs);
    console.log(`\nnecessary-writes floor ratio (target ≤ 1.3x), each round against its own floor:`);
    for (const [r, round] of rounds.entries()) {
      const floorMs = round.necessary!.necessaryMs;
      console.log(`  round ${r + 1}: floor ${(floorMs / 1000).toFixed(1)} s; single leader ${(round.single.convergeMs / floorMs).toFixed(2)}x, ${SHARDS} shards ${(round.sharded!.convergeMs / floorMs).toFixed(2)}x`);
    }
    console.log(`  all ${rounds.length} rounds summed: single leader ${(sum((round) => round.single.convergeMs) / floorSum).toFixed(2)}x, ${SHARDS} shards ${(sum((round) => round.sharded!.convergeMs) / floorSum).toFixed(2)}x`);
    if (SAME_REQUESTS_FLOOR) {
      const sameSum = sum((round) => round.sameRequests!.necessaryMs);
      console.log(`  the same requests in bulk, all rounds summed: ${(sameSum / floorSum).toFixed(2)}x the floor; single leader ${(sum((round) => round.single.convergeMs) / sameSum).toFixed(2)}x, ${SHARDS} shards ${(sum((round) => round.sharded!.convergeMs) / sameSum).toFixed(2)}x of it`);
    }
  }
}
