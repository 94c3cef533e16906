/**
 * Replaces a Secret's data whole (PUT, RBAC verb `update`) with the
 * resourceVersion it was read at as a precondition: a Secret someone changed
 * since is not written over (409, thrown), and the next reconcile decides
 * again from what it reads then. The certificate rotation and the client
 * identities' renewal, ledger and revocation write through it.
 */
import type { CachedObject } from '../../kube/informer.js';
import { resourcePath } from '../../kube/client.js';
import { encodeSecretValue } from '../../engines/etcd/secret-data.js';
import type { SecretUpdate } from '../day2/certificate-rotation-step.js';
import type { ReconcileContext } from './reconcile-context.js';

/** Returns the Secret as written (its new resourceVersion: a later write of the same reconcile goes with it). */
export async function updateSecret(ctx: Pick<ReconcileContext, 'client'>, cached: CachedObject, update: SecretUpdate): Promise<CachedObject> {
  const written: CachedObject = await ctx.client.request('PUT', resourcePath('v1', 'Secret', cached.metadata.namespace!, update.name), {
    body: {
      apiVersion: 'v1', kind: 'Secret', type: (cached as { type?: string }).type,
      metadata: { ...cached.metadata, resourceVersion: update.resourceVersion },
      data: Object.fromEntries(Object.entries(update.data).map(([k, v]) => [k, encodeSecretValue(k, v)])),
    },
  });
  return written;
}
