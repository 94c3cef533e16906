/**
 * The metric names a PromQL expression reads, and the Grafana variables it
 * uses: enough of PromQL's lexical grammar to tell a metric name from a
 * function, a keyword, a label name or a duration, so that a test can check
 * every name a dashboard or an alert queries against what is exported.
 *
 * A metric name is an identifier outside strings, label matchers (`{...}`),
 * ranges and subqueries (`[...]`) and grouping label lists (`by (...)`,
 * `on (...)`...), that is not followed by `(` (a function call) and is not
 * an operator keyword. A selector written as `{__name__="x"}` names `x`.
 */

/** Words that are operators or modifiers, never metric names. */
const KEYWORDS = new Set(['and', 'or', 'unless', 'atan2', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset', 'start', 'end', 'inf', 'nan']);
/** Clauses followed by a parenthesised list of label names. */
const LABEL_LIST_CLAUSES = /\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g;

/** The text with every string literal replaced by an empty one of the same quote. */
function withoutStrings(expr: string): string {
  return expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, (s) => s[0] + s[0]);
}

/** Names given as `__name__="x"` inside label matchers: read before the matchers are dropped. */
function namesInMatchers(expr: string): string[] {
  return [...expr.matchAll(/__name__\s*=\s*"([a-zA-Z_:][a-zA-Z0-9_:]*)"/g)].map((m) => m[1]);
}

/** Every metric name the expression reads, each once, in order of first appearance. */
export function metricNames(expr: string): string[] {
  const names = namesInMatchers(expr);
  const bare = withoutStrings(expr)
    .replace(/#[^\n]*/g, '') // comments
    .replace(/\{[^}]*\}/g, '{}') // label matchers: label names and values
    .replace(/\[[^\]]*\]/g, '[]') // ranges and subqueries: durations, $__rate_interval
    .replace(LABEL_LIST_CLAUSES, (_all, clause: string) => `${clause} ()`);
  for (const match of bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const word = match[0];
    const before = bare[match.index - 1];
    // Part of a number (1e3, 0x1f), a duration (5m after offset) or a Grafana variable ($cluster).
    if (before !== undefined && /[0-9.$]/.test(before)) continue;
    if (KEYWORDS.has(word.toLowerCase())) continue;
    const after = bare.slice(match.index + word.length).trimStart();
    if (after.startsWith('(')) continue; // a function call: rate(, sum(, histogram_quantile(
    if (/^(by|without)\b/.test(after)) continue; // an aggregation with its grouping first: sum by (pod) (...)
    if (!names.includes(word)) names.push(word);
  }
  return names;
}

/** Grafana's own variables, always defined. */
export const GRAFANA_BUILT_IN_VARIABLES = new Set(['__rate_interval', '__interval', '__interval_ms', '__range', '__range_s', '__range_ms', '__dashboard', '__from', '__to', '__org', '__user', '__name', '__all', '__auto']);

/** The Grafana variables a text uses: `$name`, `${name}`, `${name:format}` and `[[name]]`. */
export function variablesUsed(text: string): string[] {
  const found = [...text.matchAll(/\$\{([a-zA-Z_][a-zA-Z0-9_]*)(?::[^}]*)?\}|\$([a-zA-Z_][a-zA-Z0-9_]*)|\[\[([a-zA-Z_][a-zA-Z0-9_]*)(?::[^\]]*)?\]\]/g)].map((m) => m[1] ?? m[2] ?? m[3]);
  return [...new Set(found)];
}
