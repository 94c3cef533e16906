/**
 * What a member's etcd container and its restore init container must spell
 * the same way: the pod's own name and namespace (expanded by Kubernetes),
 * the data directory, and the cluster token. A restore under another name,
 * directory or token would give etcd a data directory it does not recognise.
 */
import type { k8s } from 'cdk8s-plus-27';
import type { MemberContainerProps } from '../engine.js';

/** Kubernetes expands these in arguments from the pod's own environment. */
export const POD = '$(POD_NAME)';
export const NAMESPACE = '$(POD_NAMESPACE)';

/** etcd's data directory: a directory of its own on the member's volume (etcd wants 0700, which it sets on a directory it creates, not on the volume's root). */
export const dataDirectory = (config: MemberContainerProps['config']): string => `${config.dataPath}/etcd`;

/** The token members of one cluster bootstrap with, so that two clusters never join by mistake. */
export const clusterToken = (identity: MemberContainerProps['identity']): string => `${identity.statefulSetName}.${NAMESPACE}`;

/** The member ConfigMap's keys (member-container.ts, memberConfig): how to start, read once when a container starts. */
export const MEMBER_CONFIG_KEYS = ['ETCD_INITIAL_CLUSTER', 'ETCD_INITIAL_CLUSTER_STATE'] as const;

/**
 * The member ConfigMap's keys as environment variables, each named: never the whole ConfigMap (`envFrom`), where
 * anyone who can write it would add etcd settings the command line does not set (`ETCD_ENABLE_PPROF`,
 * `ETCD_LISTEN_CLIENT_HTTP_URLS`), which etcd reads from its environment as it reads flags.
 */
export function memberConfigEnv(identity: MemberContainerProps['identity']): k8s.EnvVar[] {
  return MEMBER_CONFIG_KEYS.map((key) => ({ name: key, valueFrom: { configMapKeyRef: { name: identity.memberConfigName, key } } }));
}
