import { Construct } from 'constructs';
import { PrometheusRule, PrometheusRuleSpecGroupsRulesExpr } from '../../imports/monitoring.coreos.com.js';
import type { GeneratorConfig } from '../../api/config.js';
import { CLUSTER_LABEL } from '../../model/monitoring.js';
import type { ControllerIdentity } from './controller-identity.js';

/** One alerting rule as Prometheus reads it in a rule file (and a PrometheusRule holds it). */
export interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  readonly for?: string;
  readonly labels: { readonly severity: 'warning' | 'critical' };
  readonly annotations: { readonly summary: string; readonly description: string; readonly runbook_url: string };
}

/** A named group of rules, evaluated together. */
export interface AlertRuleGroup {
  readonly name: string;
  readonly rules: readonly AlertRule[];
}

/** What the rules' selectors and links depend on. */
export interface AlertRuleOptions {
  /** Where the controller runs: its metrics Service names the scrape job of its series (the ServiceMonitor's default job label). */
  readonly controller: Pick<ControllerIdentity, 'namespace' | 'metricsServiceName'>;
  /** Each alert's runbook_url is this and `#<alert name in lower case>`, a section of docs/monitoring.md. */
  readonly runbookUrl: string;
}

/** The members' series: scraped through the clusters' PodMonitors, which set the cluster label (constructs/pod-monitor.ts). */
const MEMBERS = `${CLUSTER_LABEL}!=""`;
/** A cluster: the label pair every per-cluster aggregation keeps. */
const BY_CLUSTER = `by (namespace, ${CLUSTER_LABEL})`;
const CLUSTER = `{{ $labels.namespace }}/{{ $labels.${CLUSTER_LABEL} }}`;
const MEMBERS_UP = `sum ${BY_CLUSTER} (up{${MEMBERS}})`;
const MEMBERS_ALL = `count ${BY_CLUSTER} (up{${MEMBERS}})`;
/** etcd's quorum: a majority of the voting members. */
const QUORUM = `floor(${MEMBERS_ALL} / 2) + 1`;

/**
 * Leader changes a cluster may see in 15 minutes before it is electing too
 * often: a rolling restart of a three-member cluster moves the leader at
 * most twice (as the etcd mixin's threshold, which alerts at four).
 */
export const LEADER_CHANGES_PER_15M = 4;
/** The share of the quota (etcd_server_quota_backend_bytes) the database file may fill before the alert: etcd raises NOSPACE at 100%. */
export const QUOTA_SHARE = 0.8;
/** Share of reconciles that end in an error before it is more than a retry now and then. */
export const RECONCILE_ERROR_SHARE = 0.25;

function rule(options: AlertRuleOptions, alert: string, severity: 'warning' | 'critical', expr: string, duration: string | undefined, summary: string, description: string): AlertRule {
  return {
    alert,
    expr,
    ...(duration ? { for: duration } : {}),
    labels: { severity },
    annotations: { summary, description, runbook_url: `${options.runbookUrl}#${alert.toLowerCase()}` },
  };
}

function memberRules(o: AlertRuleOptions): AlertRule[] {
  return [
    rule(o, 'DKVMemberDown', 'warning', `up{${MEMBERS}} == 0`, '2m',
      'A DistributedKV member is down.',
      `Member {{ $labels.pod }} of ${CLUSTER} has not answered Prometheus for 2 minutes. The cluster keeps its quorum while a majority answers; the controller replaces a member that stays unhealthy (healing.unhealthySeconds).`),
    rule(o, 'DKVQuorumAtRisk', 'critical', `${MEMBERS_UP} < ${MEMBERS_ALL}\nand\n${MEMBERS_UP} == ${QUORUM}`, '2m',
      'A DistributedKV cluster loses its quorum at the next member failure.',
      `${CLUSTER} has {{ $value }} members up, exactly its quorum: one more member down and it refuses every write and linearizable read.`),
    rule(o, 'DKVQuorumLost', 'critical', `${MEMBERS_UP} < ${QUORUM}`, '1m',
      'A DistributedKV cluster has lost its quorum.',
      `${CLUSTER} has only {{ $value }} members up, fewer than its quorum: it refuses every write and linearizable read until a majority is back.`),
    rule(o, 'DKVNoLeader', 'critical', `etcd_server_has_leader{${MEMBERS}} == 0`, '1m',
      'A DistributedKV member has no leader.',
      `Member {{ $labels.pod }} of ${CLUSTER} has seen no leader for a minute: it cannot serve writes or linearizable reads.`),
    rule(o, 'DKVFrequentLeaderChanges', 'warning', `max ${BY_CLUSTER} (increase(etcd_server_leader_changes_seen_total{${MEMBERS}}[15m])) >= ${LEADER_CHANGES_PER_15M}`, '5m',
      'A DistributedKV cluster elects leaders too often.',
      `${CLUSTER} saw {{ $value | humanize }} leader changes in 15 minutes: each election pauses writes. Usually slow disks, CPU starvation or a lossy network between members.`),
    rule(o, 'DKVDatabaseNearQuota', 'warning',
      `max by (namespace, ${CLUSTER_LABEL}, pod) (etcd_mvcc_db_total_size_in_bytes{${MEMBERS}} / etcd_server_quota_backend_bytes{${MEMBERS}}) > ${QUOTA_SHARE}`, '10m',
      'A DistributedKV member\'s database is near its quota.',
      `The database file of member {{ $labels.pod }} of ${CLUSTER} fills {{ $value | humanizePercentage }} of its quota; at 100% etcd raises NOSPACE and refuses writes.`),
    rule(o, 'DKVDatabaseSpaceExceeded', 'critical', `max ${BY_CLUSTER} (etcd_debugging_server_alarms{${MEMBERS}, alarm_type="NOSPACE"}) > 0`, '1m',
      'A DistributedKV cluster raised the NOSPACE alarm and refuses writes.',
      `${CLUSTER} has an active NOSPACE alarm: a member's database reached its quota, and the cluster accepts only reads and deletes until the controller has compacted, defragmented and disarmed it.`),
  ];
}

function controllerRules(o: AlertRuleOptions): AlertRule[] {
  // The job alone: the ServiceMonitor honours the controller's own labels, so a backup series' namespace is its cluster's.
  const job = `job="${o.controller.metricsServiceName}"`;
  return [
    rule(o, 'DKVBackupFailing', 'warning', `dkv_backup_failing{${job}} == 1`, '5m',
      'A DistributedKV cluster\'s latest backup failed.',
      'The newest backup Job of {{ $labels.namespace }}/{{ $labels.name }} failed (its BackupFailing condition says why).'),
    rule(o, 'DKVBackupStale', 'critical', `dkv_backup_stale{${job}} == 1`, '5m',
      'A DistributedKV cluster has no recent backup.',
      'No backup of {{ $labels.namespace }}/{{ $labels.name }} succeeded within two runs of its schedule (its BackupStale condition says since when).'),
    rule(o, 'DKVDriftFight', 'warning', `sum by (kind, field, manager) (increase(dkv_field_fights_total{${job}}[1h])) > 0`, undefined,
      'The controller stopped correcting a field another writer keeps changing.',
      'Another writer ({{ $labels.manager }}) keeps changing {{ $labels.field }} of a {{ $labels.kind }} the controller generates: the controller left it alone for a while (the drift brake) instead of fighting.'),
    rule(o, 'DKVControllerDown', 'critical', `absent(up{${job}} == 1)`, '5m',
      'No DistributedKV controller replica answers.',
      `No replica of the controller in ${o.controller.namespace} has answered Prometheus for 5 minutes: nothing corrects drift, replaces members or reports on backups.`),
    rule(o, 'DKVControllerNotLeading', 'critical', `sum(dkv_leader{${job}}) == 0\nand\nsum(dkv_shard_buckets{${job}}) == 0`, '5m',
      'No DistributedKV controller replica reconciles.',
      `Replicas of the controller in ${o.controller.namespace} answer, but none has held the leader Lease (or, sharded, any bucket) for 5 minutes: no cluster is reconciled.`),
    rule(o, 'DKVReconcileErrors', 'warning',
      `sum by (namespace, job) (rate(dkv_reconcile_total{${job}, result=~"error|terminal"}[15m]))\n/\nsum by (namespace, job) (rate(dkv_reconcile_total{${job}}[15m]))\n> ${RECONCILE_ERROR_SHARE}`, '15m',
      'DistributedKV reconciles keep failing.',
      'More than a quarter of the controller\'s reconciles ({{ $value | humanizePercentage }}) failed over 15 minutes: its log and the clusters\' Events say which clusters and why.'),
  ];
}

/** Every alert, in two groups: the members' (etcd's own metrics) and the controller's (dkv_*). */
export function alertRuleGroups(options: AlertRuleOptions): AlertRuleGroup[] {
  return [
    { name: 'dkv-members', rules: memberRules(options) },
    { name: 'dkv-controller', rules: controllerRules(options) },
  ];
}

export interface DkvAlertRulesProps {
  /** The controller's namespace and metrics Service (the rules select its series by them). */
  readonly identity: ControllerIdentity;
  /** The monitoring section: the labels a Prometheus selects rules by, their namespace and the runbook's address. */
  readonly monitoring: GeneratorConfig['monitoring'];
}

/**
 * The PrometheusRule of the DistributedKV alerts (docs/monitoring.md says
 * what each means and what to do): the members' health, quorum, leader and
 * database space from etcd's own metrics, and backups, drift fights and the
 * controller itself from the controller's. In the controller's namespace
 * unless the configuration names another (monitoring.ruleNamespace).
 */
export class DkvAlertRules extends Construct {
  readonly apiObject: PrometheusRule;

  constructor(scope: Construct, id: string, props: DkvAlertRulesProps) {
    super(scope, id);
    const { identity, monitoring } = props;
    const groups = alertRuleGroups({ controller: identity, runbookUrl: monitoring.runbookUrl });
    this.apiObject = new PrometheusRule(this, 'Resource', {
      metadata: { name: 'dkv-alerts', namespace: monitoring.ruleNamespace || identity.namespace, labels: { ...identity.labels, ...monitoring.labels } },
      spec: {
        groups: groups.map((g) => ({
          name: g.name,
          rules: g.rules.map((r) => ({ ...r, expr: PrometheusRuleSpecGroupsRulesExpr.fromString(r.expr), labels: { ...r.labels }, annotations: { ...r.annotations } })),
        })),
      },
    });
  }
}
