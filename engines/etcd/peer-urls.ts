/**
 * Where etcd members find each other: each member is its pod, reached by its
 * per-pod DNS name through the headless Service. One place spells these
 * addresses, for the arguments the generator writes and for the controller
 * that talks to members.
 */
import type { GeneratorConfig } from '../../model/generator-config.js';
import type { ClusterIdentity } from '../../model/cluster-identity.js';

/** A member's name is its pod's name: `<statefulSet>-<ordinal>`. */
export function memberName(identity: Pick<ClusterIdentity, 'statefulSetName'>, ordinal: number): string {
  return `${identity.statefulSetName}-${ordinal}`;
}

/** `<pod>.<headless Service>.<namespace>.svc.<clusterDomain>`: stable across rescheduling. */
export function memberHost(identity: Pick<ClusterIdentity, 'headlessServiceName'>, pod: string, namespace: string, config: Pick<GeneratorConfig, 'clusterDomain'>): string {
  return `${pod}.${identity.headlessServiceName}.${namespace}.svc.${config.clusterDomain}`;
}

/** `https` where the listener uses TLS (model/tls.ts), else `http`. */
const scheme = (tls: boolean | undefined): string => (tls ? 'https' : 'http');

/**
 * `http(s)://<pod>.<headless Service>:<peer port>`: relative to the members' own
 * namespace (the pod's DNS search path resolves it), so the member
 * ConfigMap can list the cluster without knowing the namespace it is
 * applied to, and a member's advertised URL equals the one it was added with.
 */
export function peerUrl(identity: Pick<ClusterIdentity, 'headlessServiceName'>, pod: string, config: Pick<GeneratorConfig, 'ports'>, tls = false): string {
  return `${scheme(tls)}://${pod}.${identity.headlessServiceName}:${config.ports.peer}`;
}

export function clientUrl(identity: Pick<ClusterIdentity, 'headlessServiceName'>, pod: string, namespace: string, config: Pick<GeneratorConfig, 'clusterDomain' | 'ports'>, tls = false): string {
  return `${scheme(tls)}://${memberHost(identity, pod, namespace, config)}:${config.ports.client}`;
}
