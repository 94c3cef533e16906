/**
 * The alert rules as Prometheus' own tool reads them: `promtool check rules`
 * on the rule file the install bundle's PrometheusRule holds, and `promtool
 * test rules` on alert-rules.promtool.yaml, where every alert fires on the
 * series that mean it and stays silent on the series that do not. promtool
 * is built from the Go module proxy (test/cluster/prometheus/build.sh).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { alertRuleGroups, ALERT_RULE_FILE, writeAlertRuleFile } from './alert-rule-file.js';
import { describeWithPrometheusTools, prometheusTools } from '../support/prometheus-tools.js';

const here = dirname(fileURLToPath(import.meta.url));
const UNIT_TESTS = 'alert-rules.promtool.yaml';

interface RuleGroup { name: string; rules: { alert: string; expr: string }[] }
interface AlertTest { alertname: string; exp_alerts?: unknown[] }
interface UnitTests { tests: { alert_rule_test?: AlertTest[] }[] }

const alerts = (alertRuleGroups() as RuleGroup[]).flatMap((g) => g.rules.map((r) => r.alert));
const cases = (parse(readFileSync(join(here, UNIT_TESTS), 'utf8')) as UnitTests).tests.flatMap((t) => t.alert_rule_test ?? []);

describe('the alert rules\' unit tests', () => {
  it('cover every alert with a case where it fires and one where it stays silent', () => {
    expect(alerts).toHaveLength(13);
    const firing = new Set(cases.filter((c) => (c.exp_alerts ?? []).length > 0).map((c) => c.alertname));
    const silent = new Set(cases.filter((c) => (c.exp_alerts ?? []).length === 0).map((c) => c.alertname));
    expect(alerts.filter((a) => !firing.has(a))).toEqual([]);
    expect(alerts.filter((a) => !silent.has(a))).toEqual([]);
    // A case for an alert that does not exist would pass silently (promtool expects no alerts of an unknown name).
    expect(cases.map((c) => c.alertname).filter((a) => !alerts.includes(a))).toEqual([]);
  });
});

describeWithPrometheusTools('promtool check rules and promtool test rules')('the alert rules, with promtool', () => {
  let promtool: string;
  let dir: string;

  beforeAll(() => {
    promtool = join(prometheusTools(), 'promtool');
    dir = mkdtempSync(join(tmpdir(), 'dkv-alert-rules-'));
    writeAlertRuleFile(dir);
    copyFileSync(join(here, UNIT_TESTS), join(dir, UNIT_TESTS));
  }, 15 * 60_000); // a first build of promtool takes minutes

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const run = (...args: string[]) => spawnSync(promtool, args, { cwd: dir, encoding: 'utf8' });

  it('passes promtool check rules on the generated rule file', () => {
    const result = run('check', 'rules', ALERT_RULE_FILE);
    expect(result.stderr).toBe('');
    expect(result.stdout).toContain(`SUCCESS: ${alerts.length} rules found`);
    expect(result.status).toBe(0);
  });

  it('passes every promtool unit test', () => {
    const result = run('test', 'rules', UNIT_TESTS);
    expect(`${result.stdout}${result.stderr}`).toContain('SUCCESS');
    expect(result.status).toBe(0);
  });

  it('fails the unit tests when a rule counts its quorum wrong (the tests can fail)', () => {
    const groups = alertRuleGroups() as RuleGroup[];
    const atRisk = groups.flatMap((g) => g.rules).find((r) => r.alert === 'DKVQuorumAtRisk')!;
    atRisk.expr = atRisk.expr.replace('/ 2) + 1', '/ 2)');
    writeFileSync(join(dir, ALERT_RULE_FILE), stringify({ groups }, { lineWidth: 0 }));
    try {
      const result = run('test', 'rules', UNIT_TESTS);
      expect(result.status).not.toBe(0);
      expect(`${result.stdout}${result.stderr}`).toContain('alertname: DKVQuorumAtRisk');
    } finally {
      writeAlertRuleFile(dir);
    }
  });
});
