/**
 * What the schema cannot say about spec.networkPolicy, checked by
 * validateDistributedKV (so `dkv validate`, `dkv synth` and the controller
 * refuse the same specs, naming the field): each client's podSelector and
 * namespaceSelector must be a label selector Kubernetes accepts (label keys
 * and values, In/NotIn with values, Exists/DoesNotExist without). Otherwise
 * the API server would refuse the NetworkPolicy after the cluster's other
 * objects were applied.
 */
import { labelSelectorProblems } from '../model/label-selector.js';
import type { FieldProblem } from './schema-errors.js';

const SELECTORS = ['podSelector', 'namespaceSelector'] as const;

/** Every problem of `spec.networkPolicy` beyond the schema's; `reported` are the schema's, so that no field is reported twice. */
export function networkPolicyProblems(spec: Record<string, any> | undefined, reported: readonly FieldProblem[]): FieldProblem[] {
  const clients = spec?.networkPolicy?.clients;
  if (!Array.isArray(clients)) return [];
  const reportedPaths = reported.map((p) => p.segments.join('.'));
  // A field of a newer version than the document's is reported as such, and nothing inside it.
  if (reportedPaths.includes('spec.networkPolicy')) return [];
  const problems: FieldProblem[] = [];
  clients.forEach((client: unknown, i) => {
    if (typeof client !== 'object' || client === null) return;
    for (const field of SELECTORS) {
      const segments = ['spec', 'networkPolicy', 'clients', i, field];
      for (const p of labelSelectorProblems((client as Record<string, unknown>)[field])) {
        const at = [...segments, ...p.segments];
        if (!reportedPaths.includes(at.join('.'))) problems.push({ segments: at, message: p.message });
      }
    }
  });
  return problems;
}
