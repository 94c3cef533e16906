/**
 * A StatefulSet's member pods, read fresh from the API server (a cached pod
 * could be one step behind the decision it feeds): the pods its selector
 * matches whose name is `<statefulSet>-<ordinal>`. The membership and upgrade
 * steps and the storage step read them here, each keeping what it needs.
 */
import { resourcePath, type KubeClient } from '../../kube/client.js';
import type { CachedObject } from '../../kube/informer.js';
import { equalitySelector } from '../../kube/label-selector.js';

export async function readMemberPods(
  client: KubeClient, namespace: string, selector: Readonly<Record<string, string>>, statefulSetName: string,
): Promise<CachedObject[]> {
  const list = await client.request<{ items: CachedObject[] }>('GET', resourcePath('v1', 'Pod', namespace), { query: { labelSelector: equalitySelector(selector) } });
  const member = new RegExp(`^${statefulSetName}-\\d+$`);
  return list.items.filter((p) => member.test(p.metadata.name));
}
