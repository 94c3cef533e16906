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

export interface AlertRuleFileOptions {
  /**
   * Divide every rule's `for` by this (60: a minute becomes a second), and
   * change nothing else: what a test with a real Prometheus loads, so that
   * an alert of a two-minute window fires in seconds (shortenFor).
   * @default 1 (the rules as generated)
   */
  readonly forDivisor?: number;
}

/** Writes the rule file into `dir`; returns its path. */
export function writeAlertRuleFile(dir: string, options: AlertRuleFileOptions = {}): string {
  const file = join(dir, ALERT_RULE_FILE);
  const groups = alertRuleGroups() as RuleGroupLike[];
  writeFileSync(file, stringify({ groups: options.forDivisor ? shortenFor(groups, options.forDivisor) : groups }, { lineWidth: 0 }));
  return file;
}

/** A rule group as far as shortenFor reads it: every other field is copied as it is. */
export interface RuleGroupLike { readonly rules: readonly { readonly for?: string }[] }

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000, y: 31_536_000_000 };

/** A Prometheus duration (`90s`, `1h30m`, `250ms`) in milliseconds; throws on anything else. */
export function durationMs(duration: string): number {
  const parts = [...duration.matchAll(/(\d+)(ms|s|m|h|d|w|y)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== duration) throw new Error(`not a Prometheus duration: '${duration}'`);
  return parts.reduce((sum, [, n, unit]) => sum + Number(n) * UNIT_MS[unit], 0);
}

/** Milliseconds as a Prometheus duration: whole seconds as `Ns`, the rest as `Nms`. */
export function formatDuration(ms: number): string {
  if (!Number.isInteger(ms) || ms < 0) throw new Error(`not a whole number of milliseconds: ${ms}`);
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/**
 * The rule groups with every `for` divided by `divisor` (2m → 2s with 60);
 * a rule without `for` keeps none. The expressions, labels, annotations and
 * groups stay exactly as they are: the alert that fires is the generated
 * one, only sooner. A `for` that would not divide into whole milliseconds
 * is refused rather than rounded.
 */
export function shortenFor<G extends RuleGroupLike>(groups: readonly G[], divisor: number): G[] {
  return groups.map((group) => ({
    ...group,
    rules: group.rules.map((rule) => (rule.for === undefined ? { ...rule } : { ...rule, for: formatDuration(durationMs(rule.for) / divisor) })),
  }));
}
