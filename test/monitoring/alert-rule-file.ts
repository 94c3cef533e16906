/**
 * The alert rules as a Prometheus rule file (`groups:`), taken from the
 * PrometheusRule `dkv install --monitoring` writes: what promtool checks and
 * tests here, and what a Prometheus of a test loads (rule_files).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { controllerConfiguration } from '../../constructs/install/controller-configuration.js';
import { synthesizeInstall } from '../../constructs/install/dkv-install.js';

/** Its name: the promtool unit tests (alert-rules.promtool.yaml) load it by this name from their own directory. */
export const ALERT_RULE_FILE = 'dkv-alerts.rules.yaml';

/** The rule groups of the install bundle's PrometheusRule, with the default configuration and monitoring on. */
export function alertRuleGroups(): unknown[] {
  const objects = synthesizeInstall({ configuration: controllerConfiguration(undefined, undefined, undefined, true) });
  const rule = objects.find((o) => o.kind === 'PrometheusRule');
  if (!rule) throw new Error('dkv install --monitoring wrote no PrometheusRule');
  return (rule as unknown as { spec: { groups: unknown[] } }).spec.groups;
}

/** Writes the rule file into `dir`; returns its path. */
export function writeAlertRuleFile(dir: string): string {
  const file = join(dir, ALERT_RULE_FILE);
  writeFileSync(file, stringify({ groups: alertRuleGroups() }, { lineWidth: 0 }));
  return file;
}
