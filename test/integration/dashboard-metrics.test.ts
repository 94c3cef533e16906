/**
 * No query of the Grafana dashboard reads a metric nobody exports: three
 * real etcd members started from the generated arguments (TLS on, the
 * default) and a real controller against the test control plane are
 * scraped as Prometheus would (each member's plain metrics listener, the
 * controller's registry, which its /metrics serves), after the cluster has
 * done what the panels show (client writes, a drift corrected, a backup
 * completed), and every metric name in every panel's and variable's
 * PromQL must be among the sample names they expose (a histogram's
 * `_bucket`, `_sum` and `_count`). `up` is the one series Prometheus makes
 * itself, for every target.
 *
 * The label names the queries assume (`namespace`, `pod`, `dkv_cluster`,
 * `job`) are added by the scrape, not exported: docs/dashboard.md says so,
 * and a test with a real Prometheus checks them.
 */
import { loadDefaultConfig } from '../../api/config.js';
import { clusterIdentity } from '../../model/cluster-identity.js';
import { resourcePath } from '../../kube/client.js';
import { panelQueries, variableSelectors } from '../../constructs/install/dashboard/dkv-dashboard.js';
import { LATER_BINARIES_BUILD_MS } from '../cluster/binaries.js';
import { describeWithCluster, eventually } from '../cluster/kube.js';
import { writeOrders } from '../support/etcd-members.js';
import { EtcdTestBed } from '../support/etcd-test-bed.js';
import { startManualBackupJob } from '../support/manual-backup-job.js';
import { metricNames } from '../support/promql-names.js';
import { createCluster } from './controller-harness.js';

const config = loadDefaultConfig();
const NAME = 'kv';
const SIZE = 3;
const mergePatch = 'application/merge-patch+json';
/** Series Prometheus itself adds for every target it scrapes. */
const MADE_BY_PROMETHEUS = ['up'];

/** The sample names of a Prometheus text exposition: only those with a sample, not a bare HELP/TYPE. */
function sampleNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const line of exposition.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    names.add(/^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)![0]);
  }
  return names;
}

describeWithCluster('the dashboard\'s queries against what real members and a real controller export', () => {
  let bed: EtcdTestBed;
  const identity = clusterIdentity(NAME, config);

  beforeAll(async () => {
    bed = await EtcdTestBed.start({ config, name: NAME, label: 'dashboard', maxMembers: SIZE });
    // A yearly schedule: the CronJob never fires during the test; the backup Job below is run by hand.
    await createCluster(bed.client, bed.namespace, NAME, {
      size: SIZE, image: 'registry.k8s.io/etcd:3.6.8-0', backup: { s3Path: 's3://dkv-test/dashboard', schedule: '0 0 1 1 *', backupImage: 'kv-backup:1' },
    });
    await eventually(`${SIZE} healthy voting members`, async () => {
      const s = await bed.membership().status().catch(() => undefined);
      return s && s.members.length === SIZE && s.members.every((m) => m.healthy && !m.learner) ? s : undefined;
    }, 120_000, 200);
  }, 240_000 + LATER_BINARIES_BUILD_MS);

  afterAll(async () => {
    await bed?.stop();
  });

  it('finds every metric name of every panel and variable exported by the members or the controller', async () => {
    const { client, namespace, cluster } = bed;
    // TLS is the default: clients reach the members over https, and the metrics listener stays plain.
    expect(cluster.addressOf(`${NAME}-0`).clientUrl).toMatch(/^https:/);
    expect(cluster.addressOf(`${NAME}-0`).metricsUrl).toMatch(/^http:/);
    const monitor = bed.monitor();
    monitor.start();
    // What the panels show: client writes (gRPC, WAL and backend commits),
    await writeOrders(cluster.addressOf(`${NAME}-0`).clientUrl, 200);
    // a field changed behind the controller's back (drift by field manager),
    const budgetPath = resourcePath('policy/v1', 'PodDisruptionBudget', namespace, identity.podDisruptionBudgetName);
    await client.request('PATCH', budgetPath, { query: { fieldManager: 'kubectl-edit' }, body: { spec: { maxUnavailable: 2 } }, contentType: mergePatch });
    // and a backup that completed: a Job of the CronJob's template, which kwok's stages run to completion.
    await startManualBackupJob(client, namespace, identity);

    const referenced = [
      ...panelQueries().map((p) => ({ what: `panel ${p.id} "${p.title}"`, names: [...new Set(p.exprs.flatMap(metricNames))] })),
      ...variableSelectors().map((v) => ({ what: `variable $${v.name}`, names: metricNames(v.selector) })),
    ];
    expect(referenced.filter((r) => r.names.length === 0)).toEqual([]);

    let exported = new Set<string>();
    const missingOf = () => referenced.map((r) => ({ what: r.what, missing: r.names.filter((n) => !exported.has(n)) })).filter((r) => r.missing.length > 0);
    // etcd observes a peer's round trip every 30 s: the wait is for that, bounded.
    await eventually('every referenced metric to be exported', async () => {
      const members = await Promise.all(bed.pods.map(async (pod) => (await fetch(`${cluster.addressOf(pod).metricsUrl}/metrics`)).text()));
      exported = new Set([...MADE_BY_PROMETHEUS, ...members.flatMap((text) => [...sampleNames(text)]), ...sampleNames(await bed.controller!.metrics.registry.metrics())]);
      return missingOf().length === 0 ? true : undefined;
    }, 75_000, 1000).catch(() => undefined);

    const panels = referenced.filter((r) => r.what.startsWith('panel'));
    const withData = panels.filter((p) => p.names.every((n) => exported.has(n))).length;
    console.log(`dashboard: ${withData}/${panels.length} panels query only exported metrics (${new Set(referenced.flatMap((r) => r.names)).size} distinct metric names); missing: ${JSON.stringify(missingOf())}`);
    await monitor.stop();
    expect(monitor.violations).toEqual([]);
    expect(missingOf()).toEqual([]);
    expect(withData).toBe(panels.length);
  }, 150_000);
});
