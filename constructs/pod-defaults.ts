import { k8s } from 'cdk8s-plus-27';

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
