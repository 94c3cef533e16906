/**
 * The object as the API server has it, or undefined when there is none.
 * Read from the API server's watch cache (resourceVersion 0), not from etcd:
 * what a read before a write guards against (an object of that name that is
 * someone else's) is no better served by a quorum read, since nothing makes
 * the read and the write one step (create-if-absent.ts does, for creates).
 */
import { KubeApiError, resourcePath, type KubeClient } from '../../kube/client.js';
import type { CachedObject } from '../../kube/informer.js';
import type { KubeObject } from '../../model/kube-object.js';

export async function readObject(client: KubeClient, object: KubeObject): Promise<CachedObject | undefined> {
  try {
    const found = await client.request<CachedObject>('GET', resourcePath(object.apiVersion, object.kind, object.metadata.namespace, object.metadata.name), { query: { resourceVersion: '0' } });
    return { ...found, apiVersion: object.apiVersion, kind: object.kind };
  } catch (e) {
    if (e instanceof KubeApiError && e.status === 404) return undefined;
    throw e;
  }
}
