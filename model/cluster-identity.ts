import type { GeneratorConfig } from './generator-config.js';

/** The parts of a cluster that carry their own `{component}` label. */
export type Component = 'server' | 'backup';

/**
 * Every name and label derived from a DistributedKV's name, computed once so
 * that the StatefulSet's selector, the Services' selectors and the PDB's
 * selector cannot disagree.
 */
export interface ClusterIdentity {
  /** The DistributedKV's metadata.name. */
  readonly name: string;
  readonly statefulSetName: string;
  readonly headlessServiceName: string;
  readonly clientServiceName: string;
  readonly podDisruptionBudgetName: string;
  readonly backupCronJobName: string;
  readonly memberConfigName: string;
  readonly networkPolicyName: string;
  /** Labels of the server pods and of every object except the backup CronJob. */
  readonly serverLabels: Readonly<Record<string, string>>;
  /** Labels of the backup CronJob and its Jobs' pods. */
  readonly backupLabels: Readonly<Record<string, string>>;
  /** The subset of serverLabels that selects server pods (and never backup pods). */
  readonly selector: Readonly<Record<string, string>>;
  /** The same labels of backupLabels: selects the backup Jobs' pods (and never server pods). */
  readonly backupSelector: Readonly<Record<string, string>>;
  /** The configured annotations, or undefined when there are none (so no empty map is rendered). */
  readonly annotations: Readonly<Record<string, string>> | undefined;
}

function expand(template: string, name: string, component: Component): string {
  return template.replaceAll('{name}', name).replaceAll('{component}', component);
}

function labelsFor(config: GeneratorConfig, name: string, component: Component): Record<string, string> {
  return Object.fromEntries(Object.entries(config.labels).map(([k, v]) => [k, expand(v, name, component)]));
}

export function clusterIdentity(name: string, config: GeneratorConfig): ClusterIdentity {
  const serverLabels = labelsFor(config, name, 'server');
  const backupLabels = labelsFor(config, name, 'backup');
  return {
    name,
    statefulSetName: expand(config.names.statefulSet, name, 'server'),
    headlessServiceName: expand(config.names.headlessService, name, 'server'),
    clientServiceName: expand(config.names.clientService, name, 'server'),
    podDisruptionBudgetName: expand(config.names.podDisruptionBudget, name, 'server'),
    backupCronJobName: expand(config.names.backupCronJob, name, 'backup'),
    memberConfigName: expand(config.names.memberConfig, name, 'server'),
    networkPolicyName: expand(config.names.networkPolicy, name, 'server'),
    serverLabels,
    backupLabels,
    selector: Object.fromEntries(config.selectorLabels.map((k) => [k, serverLabels[k]])),
    backupSelector: Object.fromEntries(config.selectorLabels.map((k) => [k, backupLabels[k]])),
    annotations: Object.keys(config.annotations).length > 0 ? { ...config.annotations } : undefined,
  };
}

/** The object names of a cluster by the configuration key (`names.*`) that makes each. */
export function namesByTemplate(identity: ClusterIdentity): Record<keyof GeneratorConfig['names'], string> {
  return {
    statefulSet: identity.statefulSetName,
    headlessService: identity.headlessServiceName,
    clientService: identity.clientServiceName,
    podDisruptionBudget: identity.podDisruptionBudgetName,
    backupCronJob: identity.backupCronJobName,
    memberConfig: identity.memberConfigName,
    networkPolicy: identity.networkPolicyName,
  };
}

/**
 * Kubernetes' length limits on the names derived from a cluster's name.
 * A StatefulSet's pods carry a `controller-revision-hash` label of the form
 * `<statefulset>-<10 chars>`, and a label value is at most 63 characters, so
 * the StatefulSet's name is limited to 52; a CronJob's Jobs append 11
 * characters to its name, so it is limited to 52 too; Service names are
 * DNS-1035 labels (63).
 */
export const NAME_LIMITS = {
  statefulSet: 52,
  headlessService: 63,
  clientService: 63,
  podDisruptionBudget: 253,
  backupCronJob: 52,
  memberConfig: 253,
  networkPolicy: 253,
} as const satisfies Record<keyof GeneratorConfig['names'], number>;

/** What each named object is to its cluster, for messages ("the headless Service"). */
export const OBJECT_ROLES: Readonly<Record<keyof GeneratorConfig['names'], string>> = {
  statefulSet: 'StatefulSet',
  headlessService: 'headless Service',
  clientService: 'client Service',
  podDisruptionBudget: 'PodDisruptionBudget',
  backupCronJob: 'backup CronJob',
  memberConfig: 'member ConfigMap',
  networkPolicy: 'NetworkPolicy',
};

/** DNS-1035 label: Services need it, and every other derived name is satisfied by it. */
export const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/**
 * The longest DistributedKV name whose derived names all fit, for this
 * configuration. The CRD states it as a CEL rule so the API server rejects
 * what the generator would.
 */
export function maxClusterNameLength(config: GeneratorConfig): number {
  const fits = (template: string, limit: number): number => {
    const occurrences = template.split('{name}').length - 1;
    if (occurrences === 0) return Infinity;
    const fixed = template.replaceAll('{name}', '').replaceAll('{component}', 'server').length;
    return Math.floor((limit - fixed) / occurrences);
  };
  return Math.min(
    63,
    ...Object.entries(NAME_LIMITS).map(([key, limit]) => fits(config.names[key as keyof typeof NAME_LIMITS], limit)),
    ...Object.values(config.labels).map((template) => fits(template, 63)),
  );
}

/** Messages for every way `name` breaks a naming rule; empty when it is fine. */
export function nameProblems(name: string, config: GeneratorConfig): string[] {
  const problems: string[] = [];
  if (!DNS1035_LABEL.test(name)) {
    problems.push(`must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter and ending with a letter or digit) (got ${JSON.stringify(name)})`);
  }
  const identity = clusterIdentity(name, config);
  const derived = namesByTemplate(identity);
  for (const [key, limit] of Object.entries(NAME_LIMITS)) {
    const value = derived[key as keyof typeof NAME_LIMITS];
    if (value.length > limit) {
      problems.push(`too long: the ${OBJECT_ROLES[key as keyof typeof NAME_LIMITS]} name ${JSON.stringify(value)} would be ${value.length} characters; Kubernetes allows ${limit} (use a name of at most ${maxClusterNameLength(config)} characters)`);
    }
  }
  for (const [key, value] of [...Object.entries(identity.serverLabels), ...Object.entries(identity.backupLabels)]) {
    if (value.length > 63) {
      problems.push(`too long: the label ${key}=${JSON.stringify(value)} would be ${value.length} characters; Kubernetes allows 63`);
      break;
    }
  }
  return problems;
}
