/**
 * How far maintenance bounds an etcd database that takes steady overwrites:
 * two real etcd clusters side by side in one run, each started from the
 * generated StatefulSet, each taking the same N overwrites of the same keys
 * (bounded), one with maintenance on (auto-compaction as the generator renders
 * it from spec.maintenance.compaction, and
 * the controller's defragmentation decision, engines/etcd/defragmentation.ts,
 * looked at every 2 s as the controller looks at a cluster), one with it off
 * (compaction retention `0`, etcd's default: every revision kept). Prints each member's db size and
 * size in use for both, the baseline beside the figure. Never fails on a
 * number.
 *
 *   npm run bench:maintenance -- [--overwrites 100000] [--keys 100] [--value-bytes 1024] [--members 3]
 *
 * The maintained cluster keeps 1000 revisions (mode revision). etcd's
 * revision compactor looks every 5 minutes, so the bench keeps looking for
 * as long after the load (the controller would too): the figures are printed
 * right after the load and again once a compaction ran.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadDefaultConfig } from '../../api/config.js';
import { decideDefragmentationStep } from '../../engines/etcd/defragmentation.js';
import { EtcdMembership } from '../../engines/etcd/membership.js';
import { backendQuotaBytes } from '../../model/backend-quota.js';
import { locateBinaries } from '../../test/cluster/control-plane.js';
import { byRole, synth } from '../../test/generator/support.js';
import { b64, etcdPost, LocalEtcdCluster, type StatefulSetLike } from '../../test/support/etcd-members.js';
import { eventually } from '../../test/support/eventually.js';
import { httpProbe } from '../../test/support/http-probe.js';
import { runtimeAndMachine } from '../machine.js';

const MIB = 2 ** 20;
/** spec.maintenance.compaction of each cluster: on keeps the last 1000 revisions, off keeps every one. */
const COMPACTION = { on: { mode: 'revision', retention: '1000' }, off: { mode: 'revision', retention: '0' } } as const;
/** etcd's revision compactor runs every 5 minutes (server/etcdserver/api/v3compactor/revision.go). */
const REVISION_COMPACTOR_MS = 5 * 60_000;

const { values } = parseArgs({
  options: {
    overwrites: { type: 'string', default: '100000' },
    keys: { type: 'string', default: '100' },
    'value-bytes': { type: 'string', default: '1024' },
    members: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '8' },
  },
});
const overwrites = Number(values.overwrites);
const keys = Number(values.keys);
const valueBytes = Number(values['value-bytes']);
const size = Number(values.members);
const concurrency = Number(values.concurrency);

interface Running { cluster: LocalEtcdCluster; membership: EtcdMembership; pods: string[] }

async function start(name: keyof typeof COMPACTION, binDir: string, dir: string): Promise<Running> {
  const objects = synth({ name, namespace: 'bench', size, image: 'registry.k8s.io/etcd:3.6.8-0', maintenance: { compaction: COMPACTION[name] } });
  const { statefulSet } = byRole(objects);
  const sts = statefulSet as unknown as StatefulSetLike;
  const configMaps = async (n: string) => objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === n)!.data as Record<string, string>;
  const cluster = new LocalEtcdCluster(sts, 'bench', binDir, join(dir, name), configMaps);
  const pods = Array.from({ length: size }, (_, i) => `${name}-${i}`);
  for (let i = 0; i < size; i++) await cluster.start(i);
  await eventually(`${name}: ${size} member(s) ready`, async () => {
    for (const pod of pods) if ((await httpProbe(`${(await cluster.address(pod)).metricsUrl}/readyz`)).status !== 200) return undefined;
    return true;
  }, 60_000, 100, () => pods.map((p) => cluster.exited(p)).find(Boolean));
  const membership = new EtcdMembership(() => pods, (pod) => cluster.addressOf(pod).clientUrl, 5_000);
  return { cluster, membership, pods };
}

/**
 * `overwrites` puts spread over `keys` keys, `concurrency` at a time,
 * round-robin over the members. A put that fails (a request in flight while
 * leadership moves, a machine too busy) is tried again, at most 5 times, and
 * counted.
 */
async function overwrite(run: Running): Promise<{ ms: number; retried: number; lastError?: string }> {
  const started = Date.now();
  const value = b64('v'.repeat(valueBytes));
  let next = 0;
  let retried = 0;
  let lastError: string | undefined;
  await Promise.all(Array.from({ length: concurrency }, async (_, worker) => {
    const url = run.cluster.addressOf(run.pods[worker % run.pods.length]).clientUrl;
    for (let n = next++; n < overwrites; n = next++) {
      for (let attempt = 1; ; attempt++) {
        try {
          await etcdPost(url, '/v3/kv/put', { key: b64(`key/${n % keys}`), value }, 30_000);
          break;
        } catch (e) {
          lastError = (e as Error).message;
          if (attempt === 5) throw e;
          retried++;
          await new Promise((r) => setTimeout(r, 1_000));
        }
      }
    }
  }));
  return { ms: Date.now() - started, retried, lastError };
}

/** The controller's part while the load runs: a look every 2 s, and the step it decides. */
async function maintain(run: Running, done: () => boolean): Promise<string[]> {
  const config = loadDefaultConfig();
  const quotaBytes = backendQuotaBytes({});
  const made: string[] = [];
  const lastDefragmented: Record<string, number> = {};
  while (!done()) {
    try {
      await look();
    } catch (e) {
      made.push(`a look failed: ${(e as Error).message}`);
    }
    await new Promise((r) => setTimeout(r, 2_000));
  }
  return made;

  async function look(): Promise<void> {
    const step = decideDefragmentationStep({
      membership: await run.membership.status(), quotaBytes, minFreePercent: 50,
      minSizeBytes: config.maintenance.minDefragmentationSizeMiB * MIB, intervalMs: config.maintenance.defragmentationIntervalMinutes * 60_000,
      nospaceMarginPercent: config.maintenance.nospaceMarginPercent, lastDefragmented, now: Date.now(),
    });
    if (step.action?.type === 'defragment') {
      await run.membership.defragment(step.action.pod);
      lastDefragmented[step.action.pod] = Date.now();
      made.push(`defragmented ${step.action.pod}`);
    } else if (step.action?.type === 'moveLeader') {
      await run.membership.moveLeader(step.action.toId);
      made.push(`moved leadership off ${step.action.fromPod}`);
    }
  }
}

async function sizes(run: Running): Promise<string> {
  const status = await run.membership.status();
  return status.members.map((m) => `${m.name} ${(m.dbSizeBytes! / MIB).toFixed(1)} / ${(m.dbSizeInUseBytes! / MIB).toFixed(1)} MiB`).join(', ');
}

async function main(): Promise<void> {
  const binDir = locateBinaries(['etcd']);
  const dir = mkdtempSync(join(tmpdir(), 'dkv-bench-maintenance-'));
  const runs: Running[] = [];
  let onDone = false;
  let maintenance: Promise<string[]> | undefined;
  try {
    const off = await start('off', binDir, dir);
    runs.push(off);
    const on = await start('on', binDir, dir);
    runs.push(on);
    console.log(`${overwrites} overwrites of ${keys} keys (${valueBytes} B values, ${concurrency} at a time), ${size} member(s) per cluster, both clusters at once; ${runtimeAndMachine()}, ${new Date().toISOString()}`);
    const onStarted = Date.now();
    maintenance = maintain(on, () => onDone);
    const [offLoad, onLoad] = await Promise.all([overwrite(off), overwrite(on)]);
    const timing = (l: typeof offLoad) => `${(l.ms / 1000).toFixed(1)} s${l.retried ? `, ${l.retried} put(s) retried (last: ${l.lastError})` : ''}`;
    console.log('member: db size / db size in use');
    console.log(`after the load, maintenance off (baseline, etcd's defaults): ${await sizes(off)}   [${timing(offLoad)}]`);
    console.log(`after the load, maintenance on: ${await sizes(on)}   [${timing(onLoad)}]`);
    // The compactor's first run (and one more look after it); the controller keeps looking meanwhile.
    const settleUntil = onStarted + REVISION_COMPACTOR_MS + 20_000;
    while (Date.now() < settleUntil) await new Promise((r) => setTimeout(r, 1_000));
    onDone = true;
    const made = await maintenance;
    const failedLooks = made.filter((m) => m.startsWith('a look failed'));
    console.log(`${((Date.now() - onStarted) / 1000).toFixed(0)} s after the start, maintenance off (baseline): ${await sizes(off)}`);
    console.log(`${((Date.now() - onStarted) / 1000).toFixed(0)} s after the start, maintenance on (compaction ${JSON.stringify(COMPACTION.on)}, the controller's defragmentation): ${await sizes(on)}   `
      + `[${made.length - failedLooks.length} maintenance step(s)${made.length ? `: ${made.join(', ')}` : ''}]`);
  } finally {
    onDone = true;
    await maintenance;
    for (const run of runs) await run.cluster.stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
