/**
 * What a member's etcd container and its restore init container must spell
 * the same way: the pod's own name and namespace (expanded by Kubernetes),
 * the data directory, and the cluster token. A restore under another name,
 * directory or token would give etcd a data directory it does not recognise.
 */
import type { MemberContainerProps } from '../engine.js';

/** Kubernetes expands these in arguments from the pod's own environment. */
export const POD = '$(POD_NAME)';
export const NAMESPACE = '$(POD_NAMESPACE)';

/** etcd's data directory: a directory of its own on the member's volume (etcd wants 0700, which it sets on a directory it creates, not on the volume's root). */
export const dataDirectory = (config: MemberContainerProps['config']): string => `${config.dataPath}/etcd`;

/** The token members of one cluster bootstrap with, so that two clusters never join by mistake. */
export const clusterToken = (identity: MemberContainerProps['identity']): string => `${identity.statefulSetName}.${NAMESPACE}`;
