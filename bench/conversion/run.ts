/**
 * `npm run bench:conversion`: what API evolution costs, on a real
 * kube-apiserver with the controller's conversion webhook (ConversionService,
 * the code `dkv controller` runs) on loopback. Figures only; nothing is asserted.
 *
 *   1. Latency at a fixed rate: single-object GETs sent open-loop (one every
 *      1000/rate ms whether or not the last answered, so a slow answer is not
 *      hidden by sending less) for `--seconds`, in v1alpha1 (each one a
 *      ConversionReview to the webhook) beside the same GETs in v1beta1,
 *      the storage version, which need no conversion: the baseline. The
 *      webhook's own time per review comes from its histogram.
 *   2. Storage migration: `--objects` clusters created under the previous
 *      release's CRD (stored in v1alpha1), then migrated after the upgrade;
 *      beside it, the time the API server took to create them, the floor of
 *      writing that many objects once.
 *
 *   --rate <n>      requests per second (default 100)
 *   --seconds <n>   how long each rate runs (default 20)
 *   --objects <n>   clusters to migrate (default 1000)
 */
import { parseArgs } from 'node:util';
import { loadDefaultConfig } from '../../api/config.js';
import { customResourceDefinition } from '../../api/crd.js';
import { ConversionService } from '../../conversion/conversion-service.js';
import { migrateStorageVersion } from '../../conversion/storage-migration.js';
import { KubeClient } from '../../kube/client.js';
import { realClock } from '../../kube/clock.js';
import { silentLogger } from '../../kube/log.js';
import { ControllerMetrics } from '../../reconciler/process/metrics.js';
import { freePort, startControlPlane } from '../../test/cluster/control-plane.js';
import { establishCrd } from '../../test/support/crds.js';
import { runtimeAndMachine } from '../machine.js';

const { values } = parseArgs({ options: { rate: { type: 'string', default: '100' }, seconds: { type: 'string', default: '20' }, objects: { type: 'string', default: '1000' } } });
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const objects = Number(values.objects);
const NAMESPACE = 'bench';

const path = (version: string, name?: string) => `/apis/example.com/${version}/namespaces/${NAMESPACE}/distributedkvs${name ? `/${name}` : ''}`;
const body = (version: string, name: string) => ({
  apiVersion: `example.com/${version}`, kind: 'DistributedKV', metadata: { name, namespace: NAMESPACE },
  spec: { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', backup: { s3Path: 's3://b/p', schedule: '0 2 * * *' } },
});

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Open-loop GETs at `rate`/s for `seconds`: latencies in ms, and how many failed. */
async function fixedRate(client: KubeClient, version: string, names: readonly string[]): Promise<{ latencies: number[]; failures: number }> {
  const total = rate * seconds;
  const latencies: number[] = [];
  let failures = 0;
  const started = performance.now();
  const inFlight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const sent = performance.now();
    inFlight.push(client.request('GET', path(version, names[i % names.length])).then(
      () => void latencies.push(performance.now() - sent),
      () => void failures++,
    ));
  }
  await Promise.all(inFlight);
  return { latencies: latencies.sort((a, b) => a - b), failures };
}

async function inBatches<T>(items: readonly T[], size: number, each: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(each));
}

const plane = await startControlPlane();
const client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
const metrics = new ControllerMetrics();
let service: ConversionService | undefined;
try {
  const port = await freePort();
  const defaults = loadDefaultConfig();
  const config = { ...defaults, conversion: { ...defaults.conversion, url: `https://127.0.0.1:${port}/convert` } };
  for (const name of [NAMESPACE, 'dkv-system']) await client.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } });

  // The previous release: v1alpha1 alone, stored.
  const crd = customResourceDefinition(config) as any;
  const alpha = crd.spec.versions.find((v: any) => v.name === 'v1alpha1');
  await establishCrd(client, { ...crd, spec: { ...crd.spec, versions: [{ ...alpha, storage: true }], conversion: { strategy: 'None' } } });
  const names = Array.from({ length: objects }, (_, i) => `kv-${String(i).padStart(5, '0')}`);
  const createStarted = performance.now();
  await inBatches(names, 8, (name) => client.request('POST', path('v1alpha1'), { body: body('v1alpha1', name) }));
  const createSeconds = (performance.now() - createStarted) / 1000;

  // The upgrade, and the migration the leader runs.
  await establishCrd(client, crd);
  service = new ConversionService({ client, config, namespace: 'dkv-system', host: '127.0.0.1', port, clock: realClock, log: silentLogger, observe: (s, ok) => metrics.observeConversion(s, ok) });
  await service.start();
  const migrationStarted = performance.now();
  const migration = await migrateStorageVersion({ client, log: silentLogger });
  const migrationSeconds = (performance.now() - migrationStarted) / 1000;

  // Warm both paths (connections, the API server's webhook client), then measure.
  for (const version of ['v1beta1', 'v1alpha1']) for (let i = 0; i < 50; i++) await client.request('GET', path(version, names[i]));
  const sample = names.slice(0, 100);
  const beta = await fixedRate(client, 'v1beta1', sample);
  const alphaRun = await fixedRate(client, 'v1alpha1', sample);
  const histogram = (await metrics.conversions.get()).values;
  const reviews = histogram.find((v) => v.metricName?.endsWith('_count') && v.labels.result === 'success')?.value ?? 0;
  const webhookSeconds = histogram.find((v) => v.metricName?.endsWith('_sum') && v.labels.result === 'success')?.value ?? 0;

  const row = (...cells: string[]) => console.log(cells.map((c, i) => c.padEnd(i === 0 ? 46 : 22)).join(''));
  console.log(`\nconversion webhook on a real kube-apiserver (${runtimeAndMachine()}, loopback), ${rate} requests/s for ${seconds} s, open loop\n`);
  row('figure', 'v1alpha1 (webhook)', 'v1beta1 (none)');
  row('GET one object: p50', `${percentile(alphaRun.latencies, 50).toFixed(2)} ms`, `${percentile(beta.latencies, 50).toFixed(2)} ms`);
  row('GET one object: p99', `${percentile(alphaRun.latencies, 99).toFixed(2)} ms`, `${percentile(beta.latencies, 99).toFixed(2)} ms`);
  row('GET one object: max', `${alphaRun.latencies[alphaRun.latencies.length - 1].toFixed(2)} ms`, `${beta.latencies[beta.latencies.length - 1].toFixed(2)} ms`);
  row('failed requests', String(alphaRun.failures), String(beta.failures));
  row('webhook time per review (mean, histogram)', `${((webhookSeconds / Math.max(1, reviews)) * 1000).toFixed(3)} ms`, `${reviews} reviews`);
  console.log(`\nstorage version migration, ${objects} clusters stored in v1alpha1\n`);
  row('figure', 'migration', 'floor');
  row(`rewrite ${objects} objects, narrow storedVersions`, `${migrationSeconds.toFixed(2)} s`, `${createSeconds.toFixed(2)} s (creating them, 8 at a time)`);
  row('objects rewritten / skipped', `${migration.rewritten} / ${migration.skipped}`, '-');
} finally {
  await service?.stop();
  client.close();
  await plane.stop();
}
