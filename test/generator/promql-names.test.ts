/**
 * The PromQL name extraction (test/support/promql-names.ts) that checks a
 * dashboard's queries against what is exported: it must find every metric
 * name a query reads and nothing else (functions, aggregations, keywords,
 * label names, durations, Grafana variables).
 */
import { metricNames, variablesUsed } from '../support/promql-names.js';

describe('the metric names a PromQL expression reads', () => {
  it.each([
    ['a bare name', 'up', ['up']],
    ['a name with label matchers, whose label names and values are not names', 'up{namespace=~"$namespace", dkv_cluster!="", job="etcd_server"}', ['up']],
    ['a range inside a function, with a Grafana interval', 'rate(etcd_server_proposals_failed_total{pod="a"}[$__rate_interval])', ['etcd_server_proposals_failed_total']],
    ['an aggregation with its grouping after the argument', 'sum(rate(grpc_server_handled_total[5m])) by (grpc_method, grpc_code)', ['grpc_server_handled_total']],
    ['an aggregation with its grouping first', 'sum by (namespace, dkv_cluster) (up{x="y"})', ['up']],
    ['an aggregation with `without`', 'max without (instance) (etcd_server_is_leader)', ['etcd_server_is_leader']],
    ['a histogram quantile, whose `le` is a label', 'histogram_quantile(0.99, sum by (pod, le) (rate(etcd_disk_wal_fsync_duration_seconds_bucket{a="b"}[1m])))', ['etcd_disk_wal_fsync_duration_seconds_bucket']],
    ['a binary operation of two names, matched on labels', 'etcd_mvcc_db_total_size_in_bytes / on (pod) group_left (dkv_cluster) etcd_server_quota_backend_bytes', ['etcd_mvcc_db_total_size_in_bytes', 'etcd_server_quota_backend_bytes']],
    ['keywords, numbers and `vector(0)`', 'count(up == bool 0) or vector(0) and on() 1e3 > 0x1f unless time() - 5', ['up']],
    ['a name compared without spaces and followed by a comma', 'label_replace(dkv_leader==1, "a", "$1", "pod", "(.*)")', ['dkv_leader']],
    ['a subquery and an offset, whose durations are not names', 'max_over_time(dkv_workqueue_depth[1h:5m] offset 5m)', ['dkv_workqueue_depth']],
    ['a name given as __name__', '{__name__="dkv_drift_total", manager="kubectl"}', ['dkv_drift_total']],
    ['a name with a colon (a recording rule)', 'sum(namespace:up:sum)', ['namespace:up:sum']],
    ['topk with a number first', 'topk(10, sum by (kind, field) (increase(dkv_drift_total[24h])))', ['dkv_drift_total']],
    ['each name once', 'a_total / a_total + b_total', ['a_total', 'b_total']],
  ])('%s', (_what, expr, names) => {
    expect(metricNames(expr)).toEqual(names);
  });

  it('finds no name in an expression of constants and functions only', () => {
    expect(metricNames('vector(1) + scalar(time())')).toEqual([]);
  });
});

describe('the Grafana variables a text uses', () => {
  it('finds $name, ${name}, ${name:format} and [[name]], each once', () => {
    expect(variablesUsed('up{a=~"$namespace", b=~"${cluster:regex}"}[$__rate_interval] $namespace [[old]]')).toEqual(['namespace', 'cluster', '__rate_interval', 'old']);
  });

  it('finds none in a text without any', () => {
    expect(variablesUsed('sum(up{job="a$"}) * 2')).toEqual([]);
  });
});
