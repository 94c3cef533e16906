/**
 * The DistributedKV Grafana dashboard: the fleet at a glance, then one
 * cluster (or several) chosen by the `namespace` and `cluster` variables:
 * its members and their health, the leader, the database against its quota,
 * requests and latencies, backups; and the controller that keeps them.
 *
 * Generated, never edited by hand: `dkv install --monitoring` writes it into
 * the install bundle (a ConfigMap Grafana's sidecar loads) and beside it as
 * JSON, and `npm run generate` keeps deploy/monitoring/dkv-dashboard.json.
 *
 * What the queries assume of the scraped series (docs/dashboard.md):
 * a member's series carry its pod's `namespace` and `pod` and the cluster's
 * name as `dkv_cluster` (the PodMonitor adds it); the controller's carry
 * `job` = its metrics Service's name, and its backup gauges keep their own
 * `namespace` and `name` (the ServiceMonitor honours the controller's labels).
 */
import { CLUSTER_LABEL } from '../../../model/monitoring.js';
import { controllerIdentity } from '../controller-identity.js';
import { layOut, PROMETHEUS_DATASOURCE, type Dashboard, type Panel, type QueryPanel, type RowSpec, type TemplateVariable } from './grafana-dashboard.js';


/** The dashboard's uid: stable, so a reload replaces it and links to it keep working. */
export const DASHBOARD_UID = 'distributedkv';

/** The file name of the dashboard, in the ConfigMap and on disk. */
export const DASHBOARD_FILE = 'dkv-dashboard.json';

export interface DashboardOptions {
  /**
   * The scrape job of the controller's series: its metrics Service's name,
   * which the ServiceMonitor makes the job.
   * @default dkv-controller-metrics
   */
  readonly controllerJob?: string;
}

/** Every member series of the clusters chosen in the variables. */
const MEMBERS = `namespace=~"$namespace", ${CLUSTER_LABEL}=~"$cluster"`;
/** Every member series of every cluster in the chosen namespaces: the fleet. */
const FLEET = `namespace=~"$namespace", ${CLUSTER_LABEL}!=""`;
/** The controller's backup gauges of the chosen clusters (their `name` is the cluster's). */
const BACKUPS = 'namespace=~"$namespace", name=~"$cluster"';
const BY_CLUSTER = `by (namespace, ${CLUSTER_LABEL})`;
const CLUSTER_LEGEND = `{{namespace}}/{{${CLUSTER_LABEL}}}`;
const MEMBER_LEGEND = '{{namespace}}/{{pod}}';

const HEALTH_MAPPING = [{ type: 'value', options: { 0: { text: 'down', color: 'red', index: 0 }, 1: { text: 'up', color: 'green', index: 1 } } }];
const LEADER_MAPPING = [{ type: 'value', options: { 0: { text: 'no leader', color: 'red', index: 0 }, 1: { text: 'has leader', color: 'green', index: 1 } } }];
const ROLE_MAPPING = [{ type: 'value', options: { 0: { text: 'follower', color: 'blue', index: 0 }, 1: { text: 'leader', color: 'green', index: 1 } } }];
const ANY_IS_BAD = [{ color: 'green', value: null }, { color: 'red', value: 1 }];
const QUOTA_STEPS = [{ color: 'green', value: null }, { color: 'orange', value: 0.8 }, { color: 'red', value: 0.95 }];

/** p50 and p99 of a histogram, grouped by `by` (which must end the `le`-keeping grouping). */
function quantiles(bucket: string, selector: string, by: string, legend: string): { expr: string; legend: string }[] {
  return [0.5, 0.99].map((q) => ({
    expr: `histogram_quantile(${q}, sum by (${by}, le) (rate(${bucket}{${selector}}[$__rate_interval])))`,
    legend: `${legend} p${q * 100}`,
  }));
}

function rows(controller: string): RowSpec[] {
  const C = `job="${controller}"`;
  return [
    {
      title: 'Fleet',
      panels: [
        { type: 'stat', width: 4, title: 'Clusters', description: 'Clusters with at least one member scraped, in the chosen namespaces.', queries: [{ expr: `count(count ${BY_CLUSTER} (up{${FLEET}}))` }] },
        { type: 'stat', width: 4, title: 'Members up', description: 'Members whose metrics listener answers Prometheus.', queries: [{ expr: `sum(up{${FLEET}})` }] },
        { type: 'stat', width: 4, title: 'Members down', description: 'Members Prometheus discovers but cannot scrape: a stopped process, a pod not ready to serve.', thresholds: ANY_IS_BAD, queries: [{ expr: `count(up{${FLEET}} == 0) or vector(0)` }] },
        { type: 'stat', width: 4, title: 'Clusters without a leader', description: 'Clusters none of whose members sees a leader: writes fail until one is elected.', thresholds: ANY_IS_BAD, queries: [{ expr: `count(max ${BY_CLUSTER} (etcd_server_has_leader{${FLEET}}) == 0) or vector(0)` }] },
        {
          type: 'stat', width: 4, title: 'Clusters one failure from losing quorum', thresholds: ANY_IS_BAD,
          description: 'Clusters whose members up are no more than a quorum of the members scraped (3 members: 2 up): one more failure stops writes. A single-member cluster always counts.',
          queries: [{ expr: `count(sum ${BY_CLUSTER} (up{${FLEET}}) <= floor(count ${BY_CLUSTER} (up{${FLEET}}) / 2) + 1) or vector(0)` }],
        },
        { type: 'stat', width: 4, title: 'Oldest backup', unit: 's', description: 'Age of the oldest of the clusters\' newest successful backups (clusters with backups only).', queries: [{ expr: `max(time() - max by (namespace, name) (dkv_backup_last_success_timestamp_seconds{namespace=~"$namespace"}))` }] },
        {
          type: 'bargauge', width: 12, title: 'Database file against the quota', unit: 'percentunit', min: 0, max: 1, thresholds: QUOTA_STEPS,
          description: 'Each cluster\'s largest member database file as a share of its backend quota: at 100% etcd raises the NOSPACE alarm and refuses writes.',
          queries: [{ expr: `max ${BY_CLUSTER} (etcd_mvcc_db_total_size_in_bytes{${FLEET}} / etcd_server_quota_backend_bytes{${FLEET}})`, legend: CLUSTER_LEGEND, instant: true }],
        },
        {
          type: 'bargauge', width: 12, title: 'Backup age', unit: 's', min: 0,
          description: 'Time since each cluster\'s newest successful backup completed, as the controller reads it from the backup Jobs and CronJob.',
          queries: [{ expr: `time() - max by (namespace, name) (dkv_backup_last_success_timestamp_seconds{namespace=~"$namespace"})`, legend: '{{namespace}}/{{name}}', instant: true }],
        },
      ],
    },
    {
      title: 'Members: $cluster',
      panels: [
        { type: 'state-timeline', title: 'Member up', mappings: HEALTH_MAPPING, description: 'Whether Prometheus reaches each member\'s metrics listener.', queries: [{ expr: `up{${MEMBERS}}`, legend: MEMBER_LEGEND }] },
        { type: 'state-timeline', title: 'Has a leader', mappings: LEADER_MAPPING, description: 'Whether each member sees a leader (etcd_server_has_leader).', queries: [{ expr: `etcd_server_has_leader{${MEMBERS}}`, legend: MEMBER_LEGEND }] },
        { type: 'state-timeline', title: 'Leader', mappings: ROLE_MAPPING, description: 'Which member leads (etcd_server_is_leader).', queries: [{ expr: `etcd_server_is_leader{${MEMBERS}}`, legend: MEMBER_LEGEND }] },
        {
          type: 'timeseries', width: 12, title: 'Leader changes',
          description: 'Leader changes each cluster\'s members saw (the most any member counted): more than a few an hour means slow disks, a saturated network or an overloaded member.',
          queries: [{ expr: `max ${BY_CLUSTER} (increase(etcd_server_leader_changes_seen_total{${MEMBERS}}[$__rate_interval]))`, legend: CLUSTER_LEGEND }],
        },
        {
          type: 'timeseries', width: 12, title: 'Failed proposals', unit: 'ops',
          description: 'Proposals the members could not commit (no leader, lost quorum): should be 0.',
          queries: [{ expr: `sum ${BY_CLUSTER} (rate(etcd_server_proposals_failed_total{${MEMBERS}}[$__rate_interval]))`, legend: CLUSTER_LEGEND }],
        },
      ],
    },
    {
      title: 'Database: $cluster',
      panels: [
        {
          type: 'timeseries', width: 12, title: 'Database size against the quota', unit: 'bytes', min: 0,
          description: 'Each member\'s database file and the part of it in use, and the backend quota. The file counts against the quota; what is not in use, defragmentation gives back.',
          queries: [
            { expr: `etcd_mvcc_db_total_size_in_bytes{${MEMBERS}}`, legend: `${MEMBER_LEGEND} file` },
            { expr: `etcd_mvcc_db_total_size_in_use_in_bytes{${MEMBERS}}`, legend: `${MEMBER_LEGEND} in use` },
            { expr: `max ${BY_CLUSTER} (etcd_server_quota_backend_bytes{${MEMBERS}})`, legend: `${CLUSTER_LEGEND} quota` },
          ],
        },
        {
          type: 'bargauge', width: 12, title: 'Quota used', unit: 'percentunit', min: 0, max: 1, thresholds: QUOTA_STEPS,
          description: 'Each member\'s database file, and the part in use, as a share of the quota.',
          queries: [
            { expr: `etcd_mvcc_db_total_size_in_bytes{${MEMBERS}} / etcd_server_quota_backend_bytes{${MEMBERS}}`, legend: `${MEMBER_LEGEND} file`, instant: true },
            { expr: `etcd_mvcc_db_total_size_in_use_in_bytes{${MEMBERS}} / etcd_server_quota_backend_bytes{${MEMBERS}}`, legend: `${MEMBER_LEGEND} in use`, instant: true },
          ],
        },
      ],
    },
    {
      title: 'Requests and latency: $cluster',
      panels: [
        {
          type: 'timeseries', title: 'gRPC requests by method', unit: 'reqps', stacked: true,
          description: 'Unary requests the members answered, by method.',
          queries: [{ expr: `sum by (grpc_service, grpc_method) (rate(grpc_server_handled_total{${MEMBERS}, grpc_type="unary"}[$__rate_interval]))`, legend: '{{grpc_method}}' }],
        },
        {
          type: 'timeseries', title: 'gRPC errors by code', unit: 'reqps',
          // By code only: etcd counts every method with every code from the start, so per method this would draw hundreds of zero lines.
          description: 'Requests answered with a code other than OK, by code (Unavailable: no leader or quorum; DeadlineExceeded: too slow; ResourceExhausted: NOSPACE or too many requests).',
          queries: [{ expr: `sum by (grpc_code) (rate(grpc_server_handled_total{${MEMBERS}, grpc_code!="OK"}[$__rate_interval]))`, legend: '{{grpc_code}}' }],
        },
        {
          type: 'timeseries', title: 'Client traffic', unit: 'Bps',
          description: 'Bytes the members received from and sent to clients over gRPC.',
          queries: [
            { expr: `sum by (namespace, pod) (rate(etcd_network_client_grpc_received_bytes_total{${MEMBERS}}[$__rate_interval]))`, legend: `${MEMBER_LEGEND} received` },
            { expr: `sum by (namespace, pod) (rate(etcd_network_client_grpc_sent_bytes_total{${MEMBERS}}[$__rate_interval]))`, legend: `${MEMBER_LEGEND} sent` },
          ],
        },
        {
          type: 'timeseries', title: 'WAL fsync latency', unit: 's',
          description: 'How long writing the write-ahead log to disk takes. A p99 above 10 ms means a disk too slow for etcd: expect leader changes.',
          queries: quantiles('etcd_disk_wal_fsync_duration_seconds_bucket', MEMBERS, 'namespace, pod', MEMBER_LEGEND),
        },
        {
          type: 'timeseries', title: 'Backend commit latency', unit: 's',
          description: 'How long committing to the database file takes. A p99 above 25 ms means a slow disk.',
          queries: quantiles('etcd_disk_backend_commit_duration_seconds_bucket', MEMBERS, 'namespace, pod', MEMBER_LEGEND),
        },
        {
          type: 'timeseries', title: 'Peer round trip', unit: 's',
          description: 'Round trip time from each member to each of its peers (`To` is the peer\'s member id): the network between them.',
          queries: [{ expr: `histogram_quantile(0.99, sum by (namespace, pod, To, le) (rate(etcd_network_peer_round_trip_time_seconds_bucket{${MEMBERS}}[$__rate_interval])))`, legend: `${MEMBER_LEGEND} → {{To}} p99` }],
        },
      ],
    },
    {
      title: 'Backups: $cluster',
      panels: [
        {
          type: 'timeseries', width: 12, title: 'Age of the newest backup', unit: 's', min: 0,
          description: 'Time since the newest successful backup completed. It should fall back to near 0 at each scheduled run; a line that only rises means backups fail or do not run.',
          queries: [{ expr: `time() - max by (namespace, name) (dkv_backup_last_success_timestamp_seconds{${BACKUPS}})`, legend: '{{namespace}}/{{name}}' }],
        },
        {
          type: 'timeseries', width: 12, title: 'Duration of the newest backup', unit: 's', min: 0,
          description: 'From the start of the newest successful backup Job to its completion.',
          queries: [{ expr: `max by (namespace, name) (dkv_backup_last_duration_seconds{${BACKUPS}})`, legend: '{{namespace}}/{{name}}' }],
        },
      ],
    },
    {
      title: 'Controller',
      panels: [
        { type: 'state-timeline', title: 'Leading replica', mappings: ROLE_MAPPING, description: 'Which controller replica holds the leader Lease and reconciles; the others wait warm.', queries: [{ expr: `dkv_leader{${C}}`, legend: '{{pod}}' }] },
        { type: 'timeseries', title: 'Work queue depth', min: 0, description: 'Cluster keys waiting to be reconciled. It should return to 0: a queue that only grows means reconciles cannot keep up.', queries: [{ expr: `dkv_workqueue_depth{${C}}`, legend: '{{pod}}' }] },
        {
          type: 'timeseries', title: 'Reconciles by result', unit: 'ops', stacked: true,
          description: 'Reconciles finished per second: success, error (retried with backoff) and terminal (waits for a change).',
          queries: [{ expr: `sum by (result) (rate(dkv_reconcile_total{${C}}[$__rate_interval]))`, legend: '{{result}}' }],
        },
        { type: 'timeseries', title: 'Reconcile latency', unit: 's', description: 'Time one reconcile takes.', queries: quantiles('dkv_reconcile_duration_seconds_bucket', C, 'job', 'reconcile') },
        {
          type: 'timeseries', title: 'Drift by field manager',
          description: 'Drifted fields found in the generated objects, by the field manager that changed them and whether they were corrected (or, detect-only, reported). A manager that keeps coming back is fighting the controller.',
          queries: [{ expr: `sum by (manager, action) (increase(dkv_drift_total{${C}}[$__rate_interval]))`, legend: '{{manager}} ({{action}})' }],
        },
        {
          type: 'table', title: 'Most drifted fields (24 h)',
          description: 'The fields changed most often behind the controller\'s back in the last 24 hours, and by whom.',
          queries: [{ expr: `topk(10, sum by (kind, field, manager) (increase(dkv_drift_total{${C}}[24h])))`, instant: true }],
        },
        {
          type: 'timeseries', title: 'Writes by reason', unit: 'ops',
          description: 'Objects the controller wrote, by kind and reason: created, spec-changed, drift, pruned.',
          queries: [{ expr: `sum by (kind, reason) (rate(dkv_applies_total{${C}}[$__rate_interval]))`, legend: '{{kind}} {{reason}}' }],
        },
        {
          type: 'timeseries', title: 'Cached objects by kind',
          description: 'Objects the controller\'s caches hold, by kind (sharded: each replica\'s share): what its memory grows with.',
          queries: [{ expr: `sum by (pod, kind) (dkv_cache_objects{${C}})`, legend: '{{pod}} {{kind}}' }],
        },
      ],
    },
  ];
}

/** A variable of label values, every value chosen by default (`.+`: every value, never the empty one). */
function labelValuesVariable(name: string, label: string, query: string): TemplateVariable {
  return {
    name, label, type: 'query', datasource: PROMETHEUS_DATASOURCE,
    query: { query, refId: `${name}-values` }, definition: query,
    refresh: 2, sort: 1, multi: true, includeAll: true, allValue: '.+',
    current: { selected: true, text: ['All'], value: ['$__all'] }, options: [], regex: '', hide: 0,
  };
}

function variables(): TemplateVariable[] {
  return [
    { name: 'datasource', label: 'Data source', type: 'datasource', query: 'prometheus', current: {}, options: [], refresh: 1, regex: '', hide: 0 },
    labelValuesVariable('namespace', 'Namespace', `label_values(etcd_server_has_leader{${CLUSTER_LABEL}!=""}, namespace)`),
    labelValuesVariable('cluster', 'Cluster', `label_values(etcd_server_has_leader{namespace=~"$namespace", ${CLUSTER_LABEL}!=""}, ${CLUSTER_LABEL})`),
  ];
}

/** The dashboard, as Grafana's JSON model. */
export function dkvDashboard(options: DashboardOptions = {}): Dashboard {
  return {
    uid: DASHBOARD_UID,
    title: 'DistributedKV',
    description: 'DistributedKV clusters (etcd members) and their controller. Generated by dkv install --monitoring; do not edit.',
    tags: ['distributedkv', 'etcd'],
    schemaVersion: 39,
    version: 1,
    editable: true,
    graphTooltip: 1,
    refresh: '30s',
    time: { from: 'now-6h', to: 'now' },
    timezone: 'browser',
    annotations: { list: [] },
    links: [],
    templating: { list: variables() },
    panels: layOut(rows(options.controllerJob ?? controllerIdentity().metricsServiceName)),
  };
}

/** The dashboard as the file Grafana imports: deterministic, two-space indented, one final newline. */
export function dashboardJson(options: DashboardOptions = {}): string {
  return JSON.stringify(dkvDashboard(options), null, 2) + '\n';
}

/** One query panel's queries, for running them elsewhere (a test's Prometheus). */
export interface PanelQueries {
  readonly id: number;
  readonly title: string;
  readonly exprs: readonly string[];
}

const isQueryPanel = (panel: Panel): panel is QueryPanel => panel.type !== 'row';

/** Every query panel (rows hold none) with its PromQL, in the dashboard's order. */
export function panelQueries(dashboard: Dashboard = dkvDashboard()): PanelQueries[] {
  return dashboard.panels.filter(isQueryPanel).map((panel) => ({ id: panel.id, title: panel.title, exprs: panel.targets.map((t) => t.expr) }));
}

/** The PromQL selectors inside the query variables' `label_values(<selector>, <label>)`. */
export function variableSelectors(dashboard: Dashboard = dkvDashboard()): { name: string; selector: string }[] {
  return dashboard.templating.list.filter((v) => v.type === 'query').map((v) => {
    const definition = String(v.definition);
    const match = /^label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$/s.exec(definition);
    if (!match) throw new Error(`variable ${v.name}: not a label_values(<selector>, <label>) query: ${definition}`);
    return { name: v.name, selector: match[1] };
  });
}

/**
 * A query as Prometheus can run it outside Grafana: every cluster and
 * namespace chosen (`.+`, the variables' "All"), and Grafana's
 * `$__rate_interval` replaced by a window of its own.
 */
export function runnableExpr(expr: string, rateInterval = '1m'): string {
  return expr.replaceAll('$__rate_interval', rateInterval).replaceAll('"$namespace"', '".+"').replaceAll('"$cluster"', '".+"');
}
