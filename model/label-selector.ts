/**
 * Kubernetes label selectors as the spec and the configuration state them
 * (the NetworkPolicy's peers), and what makes one invalid: the schema holds
 * their shape, this holds Kubernetes' own rules on keys, values and
 * operators, so `dkv validate` refuses what the API server would refuse
 * when the NetworkPolicy is applied (and then only half the cluster's
 * objects would exist).
 */

/** One requirement of a selector: `key In (a, b)`, `key Exists`. */
export interface LabelSelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  readonly values?: readonly string[];
}

/** A label selector: every label and every requirement must match; `{}` matches everything. */
export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly LabelSelectorRequirement[];
}

/** One problem of a selector: where in it (relative segments) and what is wrong. */
export interface SelectorProblem {
  readonly segments: readonly (string | number)[];
  readonly message: string;
}

const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why `key` is not a label key (`[prefix/]name`), or undefined. */
export function labelKeyProblem(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  const expected = 'a label key: an optional DNS subdomain prefix and \'/\', then at most 63 letters, digits, \'-\', \'_\' or \'.\', starting and ending with a letter or digit';
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))) return `must be ${expected} (got ${JSON.stringify(key)})`;
  if (name.length === 0 || name.length > 63 || !NAME.test(name)) return `must be ${expected} (got ${JSON.stringify(key)})`;
  return undefined;
}

/** Why `value` is not a label value, or undefined. */
export function labelValueProblem(value: string): string | undefined {
  if (value === '' || (value.length <= 63 && NAME.test(value))) return undefined;
  return `must be a label value: empty, or at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit (got ${JSON.stringify(value)})`;
}

/**
 * Every way `selector` breaks Kubernetes' rules for a label selector (keys,
 * values, and the operators' values: In and NotIn need at least one, Exists
 * and DoesNotExist none). Only what the schema cannot say: a selector of the
 * wrong shape is the schema's to report, and is skipped here.
 */
export function labelSelectorProblems(selector: unknown): SelectorProblem[] {
  if (typeof selector !== 'object' || selector === null || Array.isArray(selector)) return [];
  const { matchLabels, matchExpressions } = selector as Record<string, unknown>;
  const problems: SelectorProblem[] = [];
  if (typeof matchLabels === 'object' && matchLabels !== null && !Array.isArray(matchLabels)) {
    for (const [key, value] of Object.entries(matchLabels)) {
      const keyProblem = labelKeyProblem(key);
      if (keyProblem) problems.push({ segments: ['matchLabels', key], message: keyProblem });
      if (typeof value === 'string') {
        const valueProblem = labelValueProblem(value);
        if (valueProblem) problems.push({ segments: ['matchLabels', key], message: valueProblem });
      }
    }
  }
  if (Array.isArray(matchExpressions)) {
    matchExpressions.forEach((requirement: unknown, i) => {
      if (typeof requirement !== 'object' || requirement === null) return;
      const { key, operator, values } = requirement as Record<string, unknown>;
      if (typeof key === 'string') {
        const keyProblem = labelKeyProblem(key);
        if (keyProblem) problems.push({ segments: ['matchExpressions', i, 'key'], message: keyProblem });
      }
      const count = Array.isArray(values) ? values.length : 0;
      if ((operator === 'In' || operator === 'NotIn') && count === 0) {
        problems.push({ segments: ['matchExpressions', i, 'values'], message: `must hold at least one value with operator ${operator}` });
      }
      if ((operator === 'Exists' || operator === 'DoesNotExist') && count > 0) {
        problems.push({ segments: ['matchExpressions', i, 'values'], message: `must be empty with operator ${operator}` });
      }
      if (Array.isArray(values)) {
        values.forEach((value: unknown, j) => {
          const valueProblem = typeof value === 'string' ? labelValueProblem(value) : undefined;
          if (valueProblem) problems.push({ segments: ['matchExpressions', i, 'values', j], message: valueProblem });
        });
      }
    });
  }
  return problems;
}
