/**
 * Rules about a configuration that only show in what it generates: derived
 * names that clash, a selector that would also pick the backup pods, label
 * values Kubernetes rejects, and patches that cannot apply. Checked once, on
 * a probe cluster, when the configuration is loaded, so a bad configuration
 * fails with its file and field instead of at the first spec (or at apply).
 */
import type { GeneratorConfig, JsonPatchOperation, PatchableKind } from './config.js';
import type { Problem } from './problem.js';
import type { ValidResource } from './validate.js';
import { clusterIdentity } from '../constructs/cluster-identity.js';
import { synthesizeCluster } from '../constructs/synthesize.js';

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

const PROBE: ValidResource = {
  apiVersion: 'example.com/v1alpha1',
  kind: 'DistributedKV',
  metadata: { name: 'probe', namespace: 'probe' },
  spec: { size: 3, image: 'probe:1', storage: { size: '1Gi' }, resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } }, backup: { s3Path: 's3://probe/p', schedule: '0 2 * * *', backupImage: 'probe:1' } },
};

function unescape(token: string): string {
  return token.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** Whether an RFC 6901 pointer names an existing value. */
function exists(document: unknown, pointer: string): boolean {
  let node = document;
  for (const token of pointer.split('/').slice(1).map(unescape)) {
    if (Array.isArray(node)) {
      if (!/^\d+$/.test(token) || Number(token) >= node.length) return false;
      node = node[Number(token)];
    } else if (node !== null && typeof node === 'object' && token in node) {
      node = (node as Record<string, unknown>)[token];
    } else {
      return false;
    }
  }
  return true;
}

function patchProblems(file: string, config: GeneratorConfig): Problem[] {
  const problems: Problem[] = [];
  const unpatched = synthesizeCluster(PROBE, { ...config, patches: {} });
  for (const [kind, ops] of Object.entries(config.patches) as [PatchableKind, readonly JsonPatchOperation[]][]) {
    const targets = unpatched.filter((o) => o.kind === kind);
    ops.forEach((op, i) => {
      const path = `patches.${kind}[${i}]`;
      // cdk8s (fast-json-patch) lets a remove of a missing path pass silently; a typo must not.
      const mustExist = op.op === 'remove' || op.op === 'replace' || op.op === 'test' ? op.path : op.op === 'copy' || op.op === 'move' ? op.from : undefined;
      if (mustExist !== undefined && i === 0 && targets.some((t) => !exists(t, mustExist))) {
        problems.push({ file, path, message: `${mustExist} does not exist in the generated ${kind}` });
      }
      if (op.from === undefined && (op.op === 'copy' || op.op === 'move')) problems.push({ file, path, message: `${op.op} needs "from"` });
    });
    if (problems.length > 0) continue;
    // Apply the ops one more at a time to name the first that fails.
    for (let i = 0; i < ops.length; i++) {
      try {
        synthesizeCluster(PROBE, { ...config, patches: { [kind]: ops.slice(0, i + 1) } });
      } catch (e) {
        const cause = (e as { cause?: Error }).cause?.message ?? String((e as Error).message).split('\n')[0];
        problems.push({ file, path: `patches.${kind}[${i}]`, message: `cannot be applied to the generated ${kind}: ${cause.split('\n')[0].slice(0, 200)}` });
        break;
      }
    }
  }
  return problems;
}

export function configProblems(file: string, config: GeneratorConfig): Problem[] {
  const problems: Problem[] = [];
  config.selectorLabels.forEach((key, i) => {
    if (!(key in config.labels)) problems.push({ file, path: `selectorLabels[${i}]`, message: `"${key}" is not one of the configured labels` });
  });
  if (config.ports.client === config.ports.peer) problems.push({ file, path: 'ports.peer', message: 'must differ from ports.client' });
  if (config.names.headlessService === config.names.clientService) {
    problems.push({ file, path: 'names.clientService', message: `must differ from names.headlessService: both Services would be named ${JSON.stringify(config.names.clientService)}` });
  }
  for (const key of Object.keys(config.labels)) {
    if (!LABEL_KEY.test(key)) problems.push({ file, path: `labels.${key}`, message: 'is not a valid label key (an optional DNS prefix and "/", then at most 63 alphanumerics, "-", "_" or ".")' });
  }
  const identity = clusterIdentity(PROBE.metadata.name, config);
  for (const [key, value] of [...Object.entries(identity.serverLabels), ...Object.entries(identity.backupLabels)]) {
    if (!LABEL_VALUE.test(value) && LABEL_KEY.test(key)) {
      problems.push({ file, path: `labels.${key}`, message: `would give the label value ${JSON.stringify(value)}, which Kubernetes rejects (alphanumerics, "-", "_", "." only, beginning and ending with an alphanumeric)` });
      break;
    }
  }
  const backupSelector = Object.fromEntries(config.selectorLabels.map((k) => [k, identity.backupLabels[k]]));
  if (problems.length === 0 && JSON.stringify(backupSelector) === JSON.stringify(identity.selector)) {
    problems.push({ file, path: 'selectorLabels', message: 'must include a label whose value differs between server and backup pods (one that uses {component}): otherwise the Services and the PodDisruptionBudget also select the backup Jobs\' pods' });
  }
  if (problems.length === 0) problems.push(...patchProblems(file, config));
  return problems;
}
