/**
 * The monitoring end to end, against a real Prometheus (3.x, built from the
 * Go module proxy by test/cluster/prometheus/build.sh): it scrapes three real
 * etcd members started from the generated arguments (the test bed: TLS on,
 * a real controller on the test control plane) and that controller's
 * /metrics, served as `dkv controller` serves it. The scrape jobs are what
 * the Prometheus Operator makes of the monitors themselves: the PodMonitor
 * the controller applied (the Prometheus Operator's CRDs are installed on
 * the plane) and the ServiceMonitor of `dkv install --monitoring`
 * (test/support/monitor-scrape-jobs.ts), with static targets in place of
 * Kubernetes discovery. The rules are the generated rule file with every
 * `for` divided by FOR_DIVISOR (shortenFor: the expressions untouched), and
 * Prometheus scrapes and evaluates every second.
 *
 * Then: stopping one member of three fires DKVMemberDown (and
 * DKVQuorumAtRisk: two of three is exactly a quorum) once its shortened
 * `for` has passed and not before, DKVQuorumLost stays silent throughout,
 * the alert clears when the member is back; and every query of every
 * dashboard panel returns data from that Prometheus.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { loadDefaultConfig, type GeneratorConfig } from '../../api/config.js';
import { packageRoot } from '../../api/package-root.js';
import { renderInstall } from '../../cli/install-command.js';
import { panelQueries, runnableExpr, variableSelectors } from '../../constructs/install/dashboard/dkv-dashboard.js';
import { resourcePath } from '../../kube/client.js';
import { clusterIdentity } from '../../model/cluster-identity.js';
import { CLUSTER_LABEL } from '../../model/monitoring.js';
import { startHealthServer } from '../../reconciler/process/health-server.js';
import { LATER_BINARIES_BUILD_MS } from '../cluster/binaries.js';
import { clusterAvailable, eventually } from '../cluster/kube.js';
import { createCluster } from '../integration/controller-harness.js';
import { ClientLoad } from '../support/etcd-load.js';
import { writeOrders } from '../support/etcd-members.js';
import { EtcdTestBed } from '../support/etcd-test-bed.js';
import { startManualBackupJob } from '../support/manual-backup-job.js';
import { podMonitorScrapeJob, serviceMonitorScrapeJob } from '../support/monitor-scrape-jobs.js';
import { describeWithPrometheusTools, prometheusTools } from '../support/prometheus-tools.js';
import { PrometheusServer, type ActiveAlert } from '../support/prometheus-server.js';
import { reportTiming } from '../support/timing-figures.js';
import { alertRuleGroups, durationMs, writeAlertRuleFile } from './alert-rule-file.js';

const NAME = 'kv';
const SIZE = 3;
/** A minute of the generated `for` windows is 5 s here: DKVMemberDown's 2m is 10 s, DKVQuorumLost's 1m is 5 s. */
const FOR_DIVISOR = 12;
/** Prometheus' scrape and rule evaluation interval. */
const INTERVAL_MS = 1000;
/** Grafana's $__rate_interval stand-in: wide enough for etcd's less frequent observations (peer round trips) to fall inside. */
const RATE_INTERVAL = '1m';
const defaults = loadDefaultConfig();
const config: GeneratorConfig = { ...defaults, monitoring: { ...defaults.monitoring, enabled: true } };

interface Rule { alert: string; expr: string; for?: string; labels: Record<string, string>; annotations: Record<string, string> }
const generatedRules = (alertRuleGroups() as { name: string; rules: Rule[] }[]).flatMap((g) => g.rules);
const forMsOf = (alert: string) => durationMs(generatedRules.find((r) => r.alert === alert)!.for!) / FOR_DIVISOR;

function prometheusOperatorCrds(): Record<string, any>[] {
  const root = join(packageRoot(), 'api', 'crds', 'prometheus-operator');
  const dir = join(root, readdirSync(root).find((v) => v.startsWith('v'))!);
  return readdirSync(dir).filter((f) => f.endsWith('.yaml')).flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS()).filter(Boolean));
}

const describeWithPrometheus = clusterAvailable ? describeWithPrometheusTools('the end-to-end test with a real Prometheus') : describe.skip;

describeWithPrometheus('a real Prometheus scraping real members and the controller, with the generated rules and dashboard', () => {
  let bed: EtcdTestBed;
  let prometheus: PrometheusServer;
  let metricsEndpoint: { port: number; close: () => Promise<void> };
  let load: ClientLoad;
  let dir: string;
  const identity = clusterIdentity(NAME, config);
  /** Every alert seen in any poll, by name and state. */
  const seen = new Set<string>();

  beforeAll(async () => {
    const t0 = Date.now();
    const binDir = prometheusTools(true);
    console.log(`prometheus e2e: build.sh prometheus took ${Date.now() - t0} ms (a cache hit once built)`);
    dir = mkdtempSync(join(tmpdir(), 'dkv-prometheus-e2e-'));
    bed = await EtcdTestBed.start({ config, name: NAME, label: 'prometheus-e2e', maxMembers: SIZE, crds: prometheusOperatorCrds() });
    // The controller's /metrics as `dkv controller` serves it (reconciler/process/main.ts).
    metricsEndpoint = await startHealthServer({ host: '127.0.0.1', port: 0, registry: bed.controller!.metrics.registry, ready: () => true });
    const { client, namespace, cluster } = bed;
    // A yearly schedule: the CronJob never fires during the test; the backup Job below is run by hand.
    await createCluster(client, namespace, NAME, {
      size: SIZE, image: 'registry.k8s.io/etcd:3.6.8-0', backup: { s3Path: 's3://dkv-test/prometheus-e2e', schedule: '0 0 1 1 *', backupImage: 'kv-backup:1' },
    });
    await eventually(`${SIZE} healthy voting members`, async () => {
      const s = await bed.membership().status().catch(() => undefined);
      return s && s.members.length === SIZE && s.members.every((m) => m.healthy && !m.learner) ? s : undefined;
    }, 120_000, 200);

    // The scrape jobs, from the monitors: the PodMonitor as the controller applied it, over the pods it selects,
    const podMonitor = await eventually('the controller to apply the PodMonitor', () => client.request('GET', resourcePath('monitoring.coreos.com/v1', 'PodMonitor', namespace, identity.statefulSetName)).catch(() => undefined), 30_000, 200);
    const selector = Object.entries(podMonitor.spec.selector.matchLabels as Record<string, string>).map(([k, v]) => `${k}=${v}`).join(',');
    const pods = (await client.request('GET', `/api/v1/namespaces/${namespace}/pods`, { query: { labelSelector: selector } })).items as any[];
    expect(pods.map((p) => p.metadata.name).sort()).toEqual([...bed.pods]);
    const memberJob = podMonitorScrapeJob(podMonitor, pods.map((p) => ({
      pod: p.metadata.name, container: p.spec.containers[0].name, address: new URL(cluster.addressOf(p.metadata.name).metricsUrl).host,
    })));
    // and the install bundle's ServiceMonitor over the Service it selects (by labels and port name): the controller's metrics Service.
    const bundle = renderInstall({ monitoring: true }) as any[];
    const serviceMonitor = bundle.find((o) => o.kind === 'ServiceMonitor');
    const services = bundle.filter((o) => o.kind === 'Service' && serviceMonitor.spec.namespaceSelector.matchNames.includes(o.metadata.namespace)
      && Object.entries(serviceMonitor.spec.selector.matchLabels).every(([k, v]) => o.metadata.labels?.[k] === v)
      && o.spec.ports.some((p: any) => p.name === serviceMonitor.spec.endpoints[0].port));
    expect(services.map((s) => s.metadata.name)).toEqual(['dkv-controller-metrics']);
    const deployment = bundle.find((o) => o.kind === 'Deployment');
    const controllerJob = serviceMonitorScrapeJob(serviceMonitor, services[0].metadata.name, services[0].metadata.namespace, [
      { pod: `${deployment.metadata.name}-0`, container: deployment.spec.template.spec.containers[0].name, address: `127.0.0.1:${metricsEndpoint.port}` },
    ]);

    const ruleFile = writeAlertRuleFile(dir, { forDivisor: FOR_DIVISOR });
    const interval = `${INTERVAL_MS / 1000}s`;
    prometheus = await PrometheusServer.start(join(binDir, 'prometheus'), dir, {
      global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
      rule_files: [ruleFile],
      scrape_configs: [memberJob, controllerJob],
    });
    await eventually('every member and the controller to be scraped', async () => {
      const up = await prometheus.query('up == 1');
      return up.length === SIZE + 1 ? up : undefined;
    }, 30_000, 200, () => prometheus.exited());

    // While Prometheus scrapes, what the panels show: client traffic throughout, a field changed behind the controller's back
    // (drift corrected, a reconcile timed), a backup completed.
    await writeOrders(cluster.addressOf(`${NAME}-0`).clientUrl, 200);
    load = new ClientLoad(cluster, bed.pods);
    load.start(20_000);
    await client.request('PATCH', resourcePath('policy/v1', 'PodDisruptionBudget', namespace, identity.podDisruptionBudgetName), {
      query: { fieldManager: 'kubectl-edit' }, body: { spec: { maxUnavailable: 2 } }, contentType: 'application/merge-patch+json',
    });
    await startManualBackupJob(client, namespace, identity);
  }, 15 * 60_000 + LATER_BINARIES_BUILD_MS); // a first build of the server takes minutes

  afterAll(async () => {
    await load?.stop();
    await prometheus?.stop();
    await metricsEndpoint?.close();
    await bed?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The alerts now, each also remembered in `seen` as `name state`. */
  async function alerts(): Promise<ActiveAlert[]> {
    const active = await prometheus.alerts();
    for (const a of active) seen.add(`${a.labels.alertname} ${a.state}`);
    return active;
  }
  const isAlert = (a: ActiveAlert, name: string, state: ActiveAlert['state']) => a.labels.alertname === name && a.state === state;

  it('loads every generated rule and evaluates each without an error against the real series', async () => {
    const rules = await eventually('every rule evaluated', async () => {
      const loaded = await prometheus.rules();
      return loaded.every((r) => r.health !== 'unknown') ? loaded : undefined;
    }, 10_000, 200);
    expect(rules.map((r) => r.name).sort()).toEqual(generatedRules.map((r) => r.alert).sort());
    expect(rules.filter((r) => r.health !== 'ok')).toEqual([]);
  });

  it('gives the series the labels the rules and the dashboard select by', async () => {
    const members = await prometheus.query(`up{${CLUSTER_LABEL}="${NAME}"}`);
    expect(members.map((s) => s.metric.pod).sort()).toEqual([...bed.pods]);
    for (const s of members) expect(s.metric).toMatchObject({ namespace: bed.namespace, job: `${bed.namespace}/${identity.statefulSetName}` });
    const controller = await prometheus.query('up{job="dkv-controller-metrics"}');
    expect(controller).toHaveLength(1);
    // honor_labels: the backup gauges keep their cluster's namespace and name.
    await eventually('the backup to be reported', async () => {
      const backups = await prometheus.query(`dkv_backup_last_success_timestamp_seconds{job="dkv-controller-metrics", namespace="${bed.namespace}", name="${NAME}"}`);
      return backups.length === 1 ? backups : undefined;
    }, 30_000, 500);
  });

  it('fires DKVMemberDown once its for window has passed after a member stops, never DKVQuorumLost, and clears it when the member is back', async () => {
    const monitor = bed.monitor();
    monitor.start();
    // A follower: stopping the leader would add an election (and DKVNoLeader's own window) to what is measured.
    const followers = await eventually('two followers', async () => {
      const samples = await prometheus.query(`etcd_server_is_leader{${CLUSTER_LABEL}="${NAME}"} == 0`);
      return samples.length === SIZE - 1 ? samples : undefined;
    }, 30_000, 200);
    const victim = followers[0].metric.pod;
    expect((await alerts()).filter((a) => a.labels.alertname.startsWith('DKVMember') || a.labels.alertname.startsWith('DKVQuorum'))).toEqual([]);

    const forMs = forMsOf('DKVMemberDown');
    const stoppedAt = Date.now();
    await bed.kubelet.crash(victim);
    let pendingAt: number | undefined;
    const firing = await eventually('DKVMemberDown to fire', async () => {
      const now = await alerts();
      const down = now.find((a) => a.labels.alertname === 'DKVMemberDown' && a.labels.pod === victim);
      if (down?.state === 'pending') pendingAt ??= Date.now();
      return down?.state === 'firing' ? down : undefined;
    }, forMs + 30_000, 100, () => prometheus.exited());
    const firedMs = Date.now() - stoppedAt;
    const atRisk = await eventually('DKVQuorumAtRisk to fire', async () => (await alerts()).find((a) => isAlert(a, 'DKVQuorumAtRisk', 'firing')), forMsOf('DKVQuorumAtRisk') + 30_000, 100);

    bed.kubelet.revive(victim);
    const revivedAt = Date.now();
    await eventually('DKVMemberDown to clear', async () => ((await alerts()).some((a) => a.labels.alertname === 'DKVMemberDown') ? undefined : true), 60_000, 100);
    const clearedMs = Date.now() - revivedAt;
    await eventually('the member to be healthy again', async () => {
      const s = await bed.membership().status().catch(() => undefined);
      return s && s.members.length === SIZE && s.members.every((m) => m.healthy) ? s : undefined;
    }, 60_000, 200);
    await monitor.stop();
    const scrapes = await prometheus.query('max by (job) (max_over_time(scrape_duration_seconds[10m]))');
    console.log(`prometheus e2e: longest scrapes: ${scrapes.map((s) => `${s.metric.job} ${Number(s.value[1]).toFixed(3)} s`).join(', ')}`);
    console.log(`prometheus e2e: ${victim} stopped → DKVMemberDown pending after ${pendingAt! - stoppedAt} ms, firing after ${firedMs} ms (for ${forMs} ms, scrape and evaluation every ${INTERVAL_MS} ms); `
      + `member back → cleared after ${clearedMs} ms; alerts seen: ${[...seen].sort().join(', ')}`);

    expect(firing.labels).toMatchObject({ namespace: bed.namespace, [CLUSTER_LABEL]: NAME, pod: victim, severity: 'warning' });
    expect(firing.annotations.summary).toBe(generatedRules.find((r) => r.alert === 'DKVMemberDown')!.annotations.summary);
    expect(atRisk.labels).toMatchObject({ namespace: bed.namespace, [CLUSTER_LABEL]: NAME, severity: 'critical' });
    // Pending first, firing only once the window has passed (a rule without its for would fire at the first evaluation):
    expect(pendingAt).toBeDefined();
    expect(firedMs).toBeGreaterThanOrEqual(forMs);
    // How much later than the window it fired is Prometheus' scrapes and evaluations on this machine's load: a figure.
    reportTiming({ what: 'prometheus: DKVMemberDown firing after a member stopped', ms: firedMs, boundMs: forMs + 3 * INTERVAL_MS + 5000,
      bound: `its for ${forMs} ms + a scrape and two evaluations of ${INTERVAL_MS} ms + 5 s` });
    expect([...seen].filter((s) => s.startsWith('DKVQuorumLost'))).toEqual([]);
    expect(monitor.violations).toEqual([]);
  }, 180_000);

  it('returns data for every query of every dashboard panel, and finds the namespace and the cluster for its variables', async () => {
    const panels = panelQueries();
    // Data: at least one series, and at least one of them a number (a histogram quantile of no observations is NaN: an empty line in Grafana).
    const emptyPanels = async () => (await Promise.all(panels.map(async (panel) => {
      const results = await Promise.all(panel.exprs.map((e) => prometheus.query(runnableExpr(e, RATE_INTERVAL))));
      return { panel: `${panel.id} ${panel.title}`, empty: panel.exprs.filter((_, i) => !results[i].some((s) => !Number.isNaN(Number(s.value[1])))) };
    }))).filter((r) => r.empty.length > 0);
    // etcd observes each peer's round trip every 30 s (rafthttp's probing status): a rate window holds an observation only once
    // Prometheus has scraped that long. The wait is for that, bounded.
    const waitStart = Date.now();
    let empty = await emptyPanels();
    if (empty.length > 0) await eventually('every panel to have data', async () => ((empty = await emptyPanels()).length === 0 ? true : undefined), 60_000, 2000).catch(() => undefined);
    const withData = panels.length - empty.length;
    console.log(`prometheus e2e: ${withData}/${panels.length} dashboard panels with data (${panels.reduce((n, p) => n + p.exprs.length, 0)} queries, `
      + `$__rate_interval=${RATE_INTERVAL}) after ${Date.now() - waitStart} ms of waiting; empty: ${JSON.stringify(empty)}`);
    expect(empty).toEqual([]);
    expect(withData).toBe(panels.length);

    const values = Object.fromEntries(await Promise.all(variableSelectors().map(async (v) => {
      const label = v.name === 'cluster' ? CLUSTER_LABEL : v.name;
      return [v.name, (await prometheus.query(`count by (${label}) (${runnableExpr(v.selector)})`)).map((s) => s.metric[label])];
    })));
    expect(values).toEqual({ namespace: [bed.namespace], cluster: [NAME] });
  }, 90_000);
});
