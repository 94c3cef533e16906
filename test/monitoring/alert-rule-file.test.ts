/**
 * The rule file a test's Prometheus loads (alert-rule-file.ts): with
 * shortened `for` windows, so that an alert of a two-minute window fires in
 * seconds, and nothing else changed, so that the alert that fires is the
 * generated one (prometheus-e2e.test.ts loads it).
 */
import { alertRuleGroups, durationMs, shortenFor } from './alert-rule-file.js';

interface Rule { alert: string; expr: string; for?: string; labels: Record<string, string>; annotations: Record<string, string> }
const DIVISOR = 12;

describe('the rule file a test\'s Prometheus loads, with shortened for windows', () => {
  const groups = alertRuleGroups() as { name: string; rules: Rule[] }[];
  const shortened = shortenFor(groups, DIVISOR);

  it('divides every for by the divisor and changes nothing else', () => {
    const strip = (r: Rule) => ({ ...r, for: undefined });
    expect(shortened.map((g) => g.name)).toEqual(groups.map((g) => g.name));
    expect(shortened.flatMap((g) => g.rules.map(strip))).toEqual(groups.flatMap((g) => g.rules.map(strip)));
    const pairs = groups.flatMap((g, i) => g.rules.map((r, j) => [r.for, shortened[i].rules[j].for]));
    expect(pairs.filter(([generated]) => generated === undefined).every(([, short]) => short === undefined)).toBe(true);
    for (const [generated, short] of pairs.filter(([g]) => g !== undefined)) expect(durationMs(short!) * DIVISOR).toBe(durationMs(generated!));
    expect(shortened.flatMap((g) => g.rules).find((r) => r.alert === 'DKVMemberDown')!.for).toBe('10s');
  });

  it('reads and writes Prometheus durations, and refuses what it cannot divide exactly', () => {
    expect(durationMs('1h30m')).toBe(5_400_000);
    expect(durationMs('250ms')).toBe(250);
    expect(() => durationMs('2 minutes')).toThrow('not a Prometheus duration');
    expect(() => shortenFor([{ rules: [{ for: '1s' }] }], 3)).toThrow('whole number of milliseconds');
  });
});
