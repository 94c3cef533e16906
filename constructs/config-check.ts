/**
 * Rules about a configuration that only show in what it generates: derived
 * names that clash, a selector that would also pick the backup pods, label
 * values Kubernetes rejects, and patches that cannot apply. Checked on probe
 * clusters of every shape (config-probes.ts) by checkConfig, which every
 * entry point calls right after loading, so a bad configuration fails with
 * its file and field instead of at the first spec (or at apply).
 */
import { CronExpressionParser } from 'cron-parser';
import { DEFAULT_CONFIG_FILE, loadConfig, type ContainerResources, type GeneratorConfig, type JsonPatchOperation, type PatchableKind } from '../api/config.js';
import { InputError, InvalidConfigError, type Problem } from '../api/problem.js';
import { commonShape, probeSpecs, type ProbeSpec } from '../api/config-probes.js';
import { clusterIdentity } from '../model/cluster-identity.js';
import type { KubeObject } from '../model/kube-object.js';
import { failingPatch, synthesizeCluster } from './synthesize.js';
import { dottedPath, pointerTokens } from '../model/field-path.js';
import { labelSelectorProblems } from '../model/label-selector.js';
import { quantityValue } from '../model/quantity.js';

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** The cluster name the label rules are checked with. */
const PROBE_NAME = 'probe';

/** Whether an RFC 6901 pointer names an existing value. */
function exists(document: unknown, pointer: string): boolean {
  let node = document;
  for (const token of pointerTokens(pointer)) {
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

/** The pointer an operation needs to exist before it applies: cdk8s (fast-json-patch) lets a remove of a missing path pass silently; a typo must not. */
function mustExist(op: JsonPatchOperation): string | undefined {
  if (op.op === 'remove' || op.op === 'replace' || op.op === 'test') return op.path;
  if (op.op === 'copy' || op.op === 'move') return op.from;
  return undefined;
}

/** Names come from the `names` templates: the length rules, the CRD's name limit and the name-clash check all read them. */
const NAME_POINTER = /^\/metadata\/(name|namespace)(\/|$)/;

/**
 * Problems of the configured patches, each tried on every probe spec: an
 * operation whose path is missing from the object as it stands (after the
 * operations before it), or that fails to apply. A problem that shows on
 * some probes only says what those probes have in common, so the message
 * names the kind of spec the patch breaks.
 */
function patchProblems(file: string, config: GeneratorConfig): Problem[] {
  const problems: Problem[] = [];
  const entries = Object.entries(config.patches) as [PatchableKind, readonly JsonPatchOperation[]][];
  for (const [kind, ops] of entries) {
    ops.forEach((op, i) => {
      const path = `patches.${kind}[${i}]`;
      if (op.from === undefined && (op.op === 'copy' || op.op === 'move')) problems.push({ file, path, message: `${op.op} needs "from"` });
      const renames = [op.path, op.from].find((p) => p !== undefined && NAME_POINTER.test(p));
      if (renames) problems.push({ file, path, message: `${renames}: a patch cannot rename or move an object; set its name in names.* instead` });
    });
  }
  if (problems.length > 0 || entries.length === 0) return problems;

  const probes = probeSpecs(config);
  /** `patches.<Kind>[i]` → its message (given the shape of spec it fails for, if not every one) and the probes it fails on. */
  const failures = new Map<string, { message: (shape: string | undefined) => string; probes: ProbeSpec[] }>();
  const fail = (path: string, message: (shape: string | undefined) => string, probe: ProbeSpec): void => {
    const failure = failures.get(path) ?? { message, probes: [] };
    if (!failure.probes.includes(probe)) failure.probes.push(probe);
    failures.set(path, failure);
  };
  for (const probe of probes) {
    const unpatched = synthesizeCluster(probe.resource, { ...config, patches: {} });
    for (const [kind, ops] of entries) {
      ops.forEach((op, i) => {
        const pointer = mustExist(op);
        if (pointer === undefined) return;
        let before: KubeObject[];
        try {
          before = i === 0 ? unpatched : synthesizeCluster(probe.resource, { ...config, patches: { [kind]: ops.slice(0, i) } });
        } catch {
          return; // an earlier operation fails: reported below
        }
        if (before.some((o) => o.kind === kind && !exists(o, pointer))) fail(`patches.${kind}[${i}]`, (shape) => `${pointer} does not exist in the generated ${kind}${shape ? ` of ${shape}` : ''}`, probe);
      });
    }
    try {
      synthesizeCluster(probe.resource, config);
    } catch (e) {
      const failure = e instanceof InvalidConfigError ? failingPatch(probe.resource, config) : undefined;
      if (!failure) throw e;
      fail(`patches.${failure.kind}[${failure.index}]`, (shape) => `cannot be applied to the generated ${failure.kind}${shape ? ` of ${shape}` : ''}: ${failure.cause}`, probe);
    }
  }
  for (const [path, { message, probes: failing }] of [...failures].sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }))) {
    problems.push({ file, path, message: message(commonShape(failing, probes)) });
  }
  return problems;
}

export function configProblems(file: string, config: GeneratorConfig): Problem[] {
  const problems: Problem[] = [];
  config.selectorLabels.forEach((key, i) => {
    if (!(key in config.labels)) problems.push({ file, path: `selectorLabels[${i}]`, message: `"${key}" is not one of the configured labels` });
  });
  if (config.ports.client === config.ports.peer) problems.push({ file, path: 'ports.peer', message: 'must differ from ports.client' });
  if (config.ports.metrics === config.ports.client || config.ports.metrics === config.ports.peer) {
    problems.push({ file, path: 'ports.metrics', message: 'must differ from ports.client and ports.peer' });
  }
  if (config.names.headlessService === config.names.clientService) {
    problems.push({ file, path: 'names.clientService', message: `must differ from names.headlessService: both Services would be named ${JSON.stringify(config.names.clientService)}` });
  }
  for (const key of Object.keys(config.labels)) {
    if (!LABEL_KEY.test(key)) problems.push({ file, path: `labels.${key}`, message: 'is not a valid label key (an optional DNS prefix and "/", then at most 63 alphanumerics, "-", "_" or ".")' });
  }
  const identity = clusterIdentity(PROBE_NAME, config);
  for (const [key, value] of [...Object.entries(identity.serverLabels), ...Object.entries(identity.backupLabels)]) {
    if (!LABEL_VALUE.test(value) && LABEL_KEY.test(key)) {
      problems.push({ file, path: `labels.${key}`, message: `would give the label value ${JSON.stringify(value)}, which Kubernetes rejects (alphanumerics, "-", "_", "." only, beginning and ending with an alphanumeric)` });
      break;
    }
  }
  if (problems.length === 0 && JSON.stringify(identity.backupSelector) === JSON.stringify(identity.selector)) {
    problems.push({ file, path: 'selectorLabels', message: 'must include a label whose value differs between server and backup pods (one that uses {component}): otherwise the Services, the PodDisruptionBudget and the NetworkPolicy also select the backup Jobs\' pods' });
  }
  const exportSchedule = config.backup.definitions.schedule;
  try {
    CronExpressionParser.parse(exportSchedule, { tz: 'UTC' });
  } catch (e) {
    problems.push({ file, path: 'backup.definitions.schedule', message: `is not a cron expression (five fields, or six with seconds first): ${(e as Error).message}` });
  }
  problems.push(...resourceProblems(file, config));
  problems.push(...networkPolicyProblems(file, config));
  if (problems.length === 0) problems.push(...patchProblems(file, config));
  return problems;
}

/** The NetworkPolicy's selectors: one Kubernetes refuses would fail every cluster's NetworkPolicy at apply. */
function networkPolicyProblems(file: string, config: GeneratorConfig): Problem[] {
  const { metricsNamespaceSelector, controller } = config.networkPolicy;
  const selectors: [string, unknown][] = [
    ['networkPolicy.metricsNamespaceSelector', metricsNamespaceSelector],
    ['networkPolicy.controller.namespaceSelector', controller.namespaceSelector],
    ['networkPolicy.controller.podSelector', controller.podSelector],
  ];
  return selectors.flatMap(([path, selector]) => labelSelectorProblems(selector).map((p) => ({ file, path: dottedPath([...path.split('.'), ...p.segments]), message: p.message })));
}

/** A default request above its limit makes pods the API server refuses (after it accepted the StatefulSet or CronJob). */
function resourceProblems(file: string, config: GeneratorConfig): Problem[] {
  const sections: [string, ContainerResources][] = [['members.resources', config.members.resources], ['restore.resources', config.restore.resources], ['backup.runner.resources', config.backup.runner.resources]];
  const problems: Problem[] = [];
  for (const [path, { requests, limits }] of sections) {
    for (const resource of ['cpu', 'memory'] as const) {
      const request = requests[resource];
      const limit = limits[resource];
      if (request !== undefined && limit !== undefined && (quantityValue(request) ?? 0) > (quantityValue(limit) ?? Infinity)) {
        problems.push({ file, path: `${path}.requests.${resource}`, message: `must be at most limits.${resource} (${limit}): Kubernetes refuses a pod whose request exceeds its limit (got ${request})` });
      }
    }
  }
  return problems;
}

/**
 * Throws an InputError naming the file, the field and the problem of
 * everything configProblems finds; returns the configuration otherwise.
 * Loading a configuration (api/config.ts) only parses it against its schema:
 * this is the step that renders probe clusters, and entry points take it
 * explicitly, so loading never depends on the generator.
 */
export function checkConfig(config: GeneratorConfig): GeneratorConfig {
  const problems = configProblems(config.file ?? DEFAULT_CONFIG_FILE, config);
  if (problems.length > 0) throw new InputError(problems);
  return config;
}

/** Loads a configuration file over the default (or the default alone) and checks it: what every entry point calls. */
export function loadCheckedConfig(file?: string): GeneratorConfig {
  return checkConfig(loadConfig(file));
}
