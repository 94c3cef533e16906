/**
 * The Grafana dashboard (constructs/install/dashboard/): a valid dashboard
 * by Grafana's JSON model (unique panel ids, every panel placed on the
 * 24-column grid without overlap, every query panel with a PromQL query on
 * the dashboard's data source, every variable a query uses defined before
 * it is used), whose member queries select only DistributedKV members, and
 * which `dkv install --monitoring` writes the same way every time: in a
 * ConfigMap Grafana's sidecar loads and as the JSON committed in
 * deploy/monitoring/. test/integration/dashboard-metrics.test.ts proves that
 * every metric the queries read is exported.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { DASHBOARD_DIRECTORY, INSTALL_FILE, renderInstall } from '../../cli/install-command.js';
import { DASHBOARD_FILE, dashboardJson, dkvDashboard, panelQueries, runnableExpr, variableSelectors } from '../../constructs/install/dashboard/dkv-dashboard.js';
import { CLUSTER_LABEL } from '../../model/monitoring.js';
import { GRID_COLUMNS, layOut, type QueryPanel } from '../../constructs/install/dashboard/grafana-dashboard.js';
import { controllerIdentity } from '../../constructs/install/controller-identity.js';
import { CLI_TIMEOUT_MS, ROOT, dkv, removeTemporaryDirectories, temporaryDirectory } from '../generator/support.js';
import { GRAFANA_BUILT_IN_VARIABLES, metricNames, variablesUsed } from '../support/promql-names.js';

afterAll(removeTemporaryDirectories);

const dashboard = dkvDashboard();
const queryPanels = dashboard.panels.filter((p): p is QueryPanel => p.type !== 'row');
const exprs = queryPanels.flatMap((p) => p.targets.map((t) => ({ panel: p.title, expr: t.expr })));

/** Every `name{matchers}` selector of an expression (the matchers' text, unparsed). */
function selectors(expr: string): { name: string; matchers: string }[] {
  return [...expr.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}/g)].map((m) => ({ name: m[1], matchers: m[2] }));
}

describe('the dashboard as Grafana reads it', () => {
  it('numbers every panel, rows included, with an id of its own', () => {
    const ids = dashboard.panels.map((p) => p.id);
    expect(ids.length).toBeGreaterThan(20);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => Number.isInteger(id) && id > 0)).toBe(true);
  });

  it('places every panel on the 24-column grid, none overlapping another', () => {
    const cells = new Set<string>();
    for (const { title, gridPos } of dashboard.panels) {
      const { x, y, w, h } = gridPos;
      expect([x, y, w, h].every(Number.isInteger)).toBe(true);
      expect(x >= 0 && w >= 1 && h >= 1 && y >= 0 && x + w <= GRID_COLUMNS).toBe(true);
      for (let i = x; i < x + w; i++) {
        for (let j = y; j < y + h; j++) {
          const cell = `${i},${j}`;
          if (cells.has(cell)) throw new Error(`panel ${JSON.stringify(title)} overlaps another at ${cell}`);
          cells.add(cell);
        }
      }
    }
  });

  it('gives every panel but the rows at least one PromQL query, each with its own refId, on the datasource variable', () => {
    expect(queryPanels.length).toBeGreaterThan(20);
    for (const panel of queryPanels) {
      expect(panel.targets.length).toBeGreaterThan(0);
      expect(new Set(panel.targets.map((t) => t.refId)).size).toBe(panel.targets.length);
      for (const target of panel.targets) {
        expect(target.expr.trim()).not.toBe('');
        expect(metricNames(target.expr).length).toBeGreaterThan(0);
        expect(target.datasource).toEqual({ type: 'prometheus', uid: '${datasource}' });
      }
      expect(panel.datasource.uid).toBe('${datasource}');
      expect(panel.description.length).toBeGreaterThan(10);
    }
    // Rows carry no query: they group the panels below them.
    expect(dashboard.panels.filter((p) => p.type === 'row').map((p) => p.title)).toEqual(['Fleet', 'Members: $cluster', 'Database: $cluster', 'Requests and latency: $cluster', 'Backups: $cluster', 'Controller']);
  });

  it('defines a datasource variable and the namespace and cluster variables, each before a variable that uses it', () => {
    const list = dashboard.templating.list;
    expect(list.map((v) => [v.name, v.type])).toEqual([['datasource', 'datasource'], ['namespace', 'query'], ['cluster', 'query']]);
    expect(list[0].query).toBe('prometheus');
    list.forEach((variable, i) => {
      const used = variablesUsed(JSON.stringify(variable.query ?? '')).filter((name) => !GRAFANA_BUILT_IN_VARIABLES.has(name));
      expect(used.filter((name) => !list.slice(0, i).some((earlier) => earlier.name === name))).toEqual([]);
    });
    expect(variableSelectors().map((v) => v.name)).toEqual(['namespace', 'cluster']);
  });

  it('uses no variable in a query or a title that the dashboard does not define', () => {
    const defined = new Set(dashboard.templating.list.map((v) => v.name));
    const texts = [...exprs.map((e) => e.expr), ...dashboard.panels.map((p) => p.title)];
    const undefinedUses = texts.flatMap((text) => variablesUsed(text).filter((name) => !defined.has(name) && !GRAFANA_BUILT_IN_VARIABLES.has(name)).map((name) => `${name} in ${text}`));
    expect(undefinedUses).toEqual([]);
    // The check sees a variable nobody defined.
    expect(variablesUsed('up{a=~"$nowhere"}').filter((name) => !defined.has(name))).toEqual(['nowhere']);
  });

  it('reads the members\' series by their cluster label, so that another etcd (the API server\'s) never shows', () => {
    const memberSelectors = exprs.flatMap(({ panel, expr }) => selectors(expr).filter((s) => /^(etcd_|grpc_|up$)/.test(s.name)).map((s) => ({ panel, ...s })));
    expect(memberSelectors.length).toBeGreaterThan(15);
    expect(memberSelectors.filter((s) => !new RegExp(`\\b${CLUSTER_LABEL}\\s*(=~|!=)`).test(s.matchers))).toEqual([]);
    expect(variableSelectors().every((v) => v.selector.includes(`${CLUSTER_LABEL}!=""`))).toBe(true);
  });

  it('reads the controller\'s series by its scrape job, except the backup gauges, which are the clusters\'', () => {
    const controllerSelectors = exprs.flatMap(({ expr }) => selectors(expr).filter((s) => s.name.startsWith('dkv_')));
    expect(controllerSelectors.length).toBeGreaterThan(8);
    const job = `job="${controllerIdentity().metricsServiceName}"`;
    expect(controllerSelectors.filter((s) => !s.name.startsWith('dkv_backup_') && !s.matchers.includes(job))).toEqual([]);
    expect(controllerSelectors.filter((s) => s.name.startsWith('dkv_backup_') && !s.matchers.includes('namespace=~"$namespace"'))).toEqual([]);
    expect(dkvDashboard({ controllerJob: 'ops-metrics' }).panels.some((p) => JSON.stringify(p).includes('job=\\"ops-metrics\\"'))).toBe(true);
  });

  it('shows what the issue asks for: members and health, leader, database against quota, requests and latency, backup age, drift by manager, queue and reconcile latency', () => {
    const read = new Set(exprs.flatMap((e) => metricNames(e.expr)));
    for (const name of [
      'up', 'etcd_server_has_leader', 'etcd_server_is_leader', 'etcd_server_leader_changes_seen_total', 'etcd_mvcc_db_total_size_in_bytes', 'etcd_mvcc_db_total_size_in_use_in_bytes',
      'etcd_server_quota_backend_bytes', 'grpc_server_handled_total', 'etcd_disk_wal_fsync_duration_seconds_bucket', 'etcd_disk_backend_commit_duration_seconds_bucket',
      'etcd_network_peer_round_trip_time_seconds_bucket', 'dkv_backup_last_success_timestamp_seconds', 'dkv_drift_total', 'dkv_workqueue_depth', 'dkv_reconcile_duration_seconds_bucket',
    ]) expect(read).toContain(name);
    expect(exprs.some((e) => /sum by \([^)]*\bmanager\b/.test(e.expr) && e.expr.includes('dkv_drift_total'))).toBe(true);
  });

  it('lists every query panel\'s queries for reuse, and makes them runnable outside Grafana', () => {
    const listed = panelQueries();
    expect(listed.map((p) => p.id)).toEqual(queryPanels.map((p) => p.id));
    expect(listed.flatMap((p) => p.exprs)).toEqual(exprs.map((e) => e.expr));
    for (const expr of listed.flatMap((p) => p.exprs).map((e) => runnableExpr(e))) expect(variablesUsed(expr)).toEqual([]);
    expect(runnableExpr('rate(up{namespace=~"$namespace", dkv_cluster=~"$cluster"}[$__rate_interval])', '30s')).toBe('rate(up{namespace=~".+", dkv_cluster=~".+"}[30s])');
  });

  it('refuses a panel wider than the grid', () => {
    expect(() => layOut([{ title: 'r', panels: [{ type: 'stat', title: 'wide', description: 'd', width: 25, queries: [{ expr: 'up' }] }] }])).toThrow('panel "wide": width 25 is outside 1..24');
  });
});

describe('the dashboard in the install bundle', () => {
  it('is in a ConfigMap labelled for Grafana\'s sidecar with --monitoring, and absent without', () => {
    const withMonitoring = renderInstall({ monitoring: true }) as any[];
    const maps = withMonitoring.filter((o) => o.kind === 'ConfigMap' && o.metadata.labels?.grafana_dashboard === '1');
    expect(maps).toHaveLength(1);
    expect(maps[0].metadata).toMatchObject({ name: 'dkv-controller-dashboard', namespace: 'dkv-system' });
    expect(JSON.parse(maps[0].data[DASHBOARD_FILE])).toEqual(dashboard);
    expect((renderInstall({ monitoring: true, namespace: 'ops' }) as any[]).find((o) => o.metadata.labels?.grafana_dashboard === '1').metadata.namespace).toBe('ops');
    const without = renderInstall() as any[];
    expect(without.filter((o) => o.metadata.labels?.grafana_dashboard !== undefined)).toEqual([]);
    // What else monitoring adds (the ServiceMonitor, the rules, their RBAC) is test/generator/monitoring.test.ts's.
  });

  it('is the same bytes every time, and the committed deploy/monitoring/dkv-dashboard.json is them', () => {
    expect(dashboardJson()).toBe(dashboardJson());
    expect(readFileSync(join(ROOT, 'deploy', DASHBOARD_DIRECTORY, DASHBOARD_FILE), 'utf8')).toBe(dashboardJson());
  });

  it('is written by dkv install --monitoring beside the bundle, in a subdirectory kubectl apply -f <out> does not read', () => {
    const dir = temporaryDirectory('dkv-dashboard-');
    expect(dkv(['install', '--out', join(dir, 'plain')]).status).toBe(0);
    expect(existsSync(join(dir, 'plain', DASHBOARD_DIRECTORY))).toBe(false);
    const result = dkv(['install', '--out', join(dir, 'out'), '--monitoring']);
    expect(result.status).toBe(0);
    expect(readFileSync(join(dir, 'out', DASHBOARD_DIRECTORY, DASHBOARD_FILE), 'utf8')).toBe(dashboardJson());
    const bundle = readFileSync(join(dir, 'out', INSTALL_FILE), 'utf8');
    expect(bundle.split('\n')[0]).toBe('# Generated by dkv install --monitoring; do not edit.');
    expect(parseAllDocuments(bundle).map((d) => d.toJS())).toEqual(renderInstall({ monitoring: true }));
  }, CLI_TIMEOUT_MS);
});
