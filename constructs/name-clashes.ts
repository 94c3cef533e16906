import type { GeneratorConfig, PatchableKind } from '../api/config.js';
import type { ValidResource } from '../api/validate.js';
import { engineFor } from '../engines/index.js';
import { hasNetworkPolicy } from './network-policy.js';
import { clusterIdentity, namesByTemplate, OBJECT_ROLES } from '../model/cluster-identity.js';

type NameTemplate = keyof GeneratorConfig['names'];

/** The Kubernetes kind of the object each name template names. */
const KIND_OF_TEMPLATE: Readonly<Record<NameTemplate, PatchableKind>> = {
  statefulSet: 'StatefulSet',
  headlessService: 'Service',
  clientService: 'Service',
  podDisruptionBudget: 'PodDisruptionBudget',
  backupCronJob: 'CronJob',
  memberConfig: 'ConfigMap',
  networkPolicy: 'NetworkPolicy',
};

/** One object a cluster generates, as Kubernetes addresses it. */
export interface GeneratedName {
  readonly kind: PatchableKind;
  readonly namespace: string | undefined;
  readonly name: string;
  /** Which name template names it (`headlessService`); OBJECT_ROLES says what that is in words. */
  readonly template: NameTemplate;
}

/**
 * The kind and name of every object a DistributedKV generates, from the
 * configured name templates alone, without rendering it: cheap enough to
 * compare every cluster with every other. The backup CronJob exists only
 * with a backup section, the member ConfigMap only with an engine that has one, the NetworkPolicy unless it is turned off. A test holds this equal to what synthesizeCluster
 * renders.
 */
export function generatedNames(resource: ValidResource, config: GeneratorConfig): GeneratedName[] {
  const names = namesByTemplate(clusterIdentity(resource.metadata.name, config));
  const generated = (t: NameTemplate): boolean => {
    if (t === 'backupCronJob') return resource.spec.backup !== undefined;
    if (t === 'memberConfig') return engineFor(config.engine).memberConfig !== undefined;
    if (t === 'networkPolicy') return hasNetworkPolicy(resource.spec, config);
    return true;
  };
  const templates = (Object.keys(names) as NameTemplate[]).filter(generated);
  return templates.map((template) => ({ kind: KIND_OF_TEMPLATE[template], namespace: resource.metadata.namespace, name: names[template], template }));
}

/** One cluster's claim on an object name. */
export interface NameClaim {
  /** The cluster's position in the list given to findNameClashes. */
  readonly index: number;
  readonly resource: ValidResource;
  /** The object as this cluster generates it. */
  readonly object: GeneratedName;
  /** What the object is to this cluster, in words ("headless Service"). */
  readonly role: string;
}

/** Two clusters that would generate the same object (kind, namespace and name), and so fight over it. */
export interface NameClash {
  /** The cluster that comes first in the list. */
  readonly first: NameClaim;
  readonly second: NameClaim;
}

/**
 * Every pair of DistributedKVs that would generate an object of the same kind,
 * namespace and name: say cluster `kv`'s headless Service `{name}-peers` and
 * cluster `kv-peers`'s client Service `{name}`, both `kv-peers`. Applied, each
 * would overwrite the other's object. Each clash is reported against the first
 * cluster that claims the name. Clusters with the same namespace and name are
 * one cluster defined twice, not a clash (that is a duplicate, reported as
 * such). Clusters without a namespace are compared with each other only.
 */
export function findNameClashes(resources: readonly ValidResource[], config: GeneratorConfig): NameClash[] {
  const clashes: NameClash[] = [];
  const claims = new Map<string, NameClaim>();
  const clusterKey = (r: ValidResource): string => `${r.metadata.namespace ?? ''}/${r.metadata.name}`;
  resources.forEach((resource, index) => {
    for (const object of generatedNames(resource, config)) {
      const claim: NameClaim = { index, resource, object, role: OBJECT_ROLES[object.template] };
      const key = `${object.kind}/${object.namespace ?? ''}/${object.name}`;
      const first = claims.get(key);
      if (!first) claims.set(key, claim);
      else if (clusterKey(first.resource) !== clusterKey(resource)) clashes.push({ first, second: claim });
    }
  });
  return clashes;
}
