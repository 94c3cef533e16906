import { k8s } from 'cdk8s-plus-27';
import type { ContainerResources } from '../api/config.js';
import type { DistributedKVSpec } from '../imports/distributedkv.js';

/**
 * The container settings of the Kubernetes "restricted" Pod Security
 * Standard, shared by the server and the backup containers.
 */
export function restrictedContainerSecurityContext(): k8s.SecurityContext {
  return {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    runAsNonRoot: true,
    capabilities: { drop: ['ALL'] },
  };
}

/** `{cpu: 2, memory: "4Gi"}` → Kubernetes quantities; undefined when nothing is set. */
export function quantities(values: { cpu?: number | string; memory?: number | string } | undefined): Record<string, k8s.Quantity> | undefined {
  if (!values) return undefined;
  const out: Record<string, k8s.Quantity> = {};
  for (const [key, value] of Object.entries(values)) {
    if (value === undefined) continue;
    out[key] = typeof value === 'number' ? k8s.Quantity.fromNumber(value) : k8s.Quantity.fromString(value);
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Requests and limits as the container spec takes them; a side with no value is left out. */
export function resourceRequirements(resources: Pick<ContainerResources, 'requests'> & Partial<Pick<ContainerResources, 'limits'>>): k8s.ResourceRequirements {
  return { requests: quantities(resources.requests), limits: quantities(resources.limits) };
}

/**
 * The member container's resources: the spec's when it gives any value, else
 * the configuration's defaults (members.resources). The spec's replace the
 * defaults whole rather than field by field: requests and limits are chosen
 * together, and a spec's memory request above a default limit would make a
 * pod the API server refuses (after the StatefulSet was accepted).
 */
export function memberResources(spec: Pick<DistributedKVSpec, 'resources'>, defaults: ContainerResources): k8s.ResourceRequirements {
  const own = spec.resources && (quantities(spec.resources.requests) || quantities(spec.resources.limits)) ? spec.resources : undefined;
  return resourceRequirements(own ? { requests: own.requests ?? {}, limits: own.limits } : defaults);
}
