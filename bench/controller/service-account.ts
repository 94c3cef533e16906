/**
 * The identity the benchmark's controllers and floors write as: the install
 * bundle's ServiceAccount, with the bundle's RBAC, through a token, as the
 * deployed controller does. With the plane's admin certificate every request
 * paid for a client-certificate chain verification (5–7% of kube-apiserver's
 * CPU at 3,000 clusters) that a token, whose authentication kube-apiserver
 * caches, does not, and no RBAC authorization, which a ServiceAccount does.
 * The floors write as the same account, so that a ratio compares work and
 * not credentials.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { renderInstall } from '../../cli/install-command.js';
import { KubeClient } from '../../kube/client.js';
import type { ControlPlane } from '../../test/cluster/control-plane.js';
import { serviceAccountToken } from '../../test/support/connections.js';

/** The bundle's objects that make up its identity and what it may do (not its Deployment, Services or webhook). */
const IDENTITY_KINDS = new Set(['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);

export interface BundleIdentity {
  /** Where the ServiceAccount lives, and its Roles (leases): where leader election and shard membership must run. */
  readonly namespace: string;
  /** A kubeconfig with the plane's address and CA and the token, for controller processes. */
  readonly kubeconfigPath: string;
  /** A client with the same token. */
  readonly client: KubeClient;
}

/** Applies the bundle's identity objects with `admin` and returns the ServiceAccount's token as a kubeconfig and a client. */
export async function bundleIdentity(admin: KubeClient, plane: ControlPlane): Promise<BundleIdentity> {
  const objects = renderInstall().filter((o) => IDENTITY_KINDS.has(o.kind));
  for (const object of objects) await admin.apply(object, { fieldManager: 'bench', force: true });
  const account = objects.find((o) => o.kind === 'ServiceAccount');
  if (!account) throw new Error('the install bundle has no ServiceAccount');
  const namespace = account.metadata.namespace!;
  // Longer than any phase: the controllers read the kubeconfig once.
  const token = await serviceAccountToken(admin, namespace, account.metadata.name, 6 * 3600);
  const kubeconfigPath = join(plane.dir, 'bundle-service-account.kubeconfig');
  writeFileSync(kubeconfigPath, stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'bench', cluster: { server: plane.server, 'certificate-authority': join(plane.dir, 'pki', 'ca.crt') } }],
    users: [{ name: account.metadata.name, user: { token } }],
    contexts: [{ name: 'bench', context: { cluster: 'bench', user: account.metadata.name } }],
    'current-context': 'bench',
  }), { mode: 0o600 });
  return { namespace, kubeconfigPath, client: KubeClient.fromKubeconfig(kubeconfigPath) };
}
