import type { KubeClient } from '../../kube/client.js';
import { eventually } from './eventually.js';

/**
 * Applies a CustomResourceDefinition and waits until it is Established and
 * every served version is listed in discovery: what clients, and the garbage
 * collector, need before the kind can be used. Returns the live CRD.
 */
export async function establishCrd(client: KubeClient, crd: Record<string, any>, deadlineMs = 30_000): Promise<Record<string, any>> {
  const name: string = crd.metadata.name;
  await client.apply(crd as any, { fieldManager: 'dkv-test', force: true });
  const { group, names: { plural }, versions } = crd.spec;
  const served = (versions as { name: string; served: boolean }[]).filter((v) => v.served).map((v) => v.name);
  return eventually(`CRD ${name} to be Established and discoverable`, async () => {
    const live = await client.request('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
    if (!live.status?.conditions?.some((c: any) => c.type === 'Established' && c.status === 'True')) return undefined;
    for (const version of served) {
      const discovery = await client.request('GET', `/apis/${group}/${version}`);
      if (!discovery.resources?.some((r: any) => r.name === plural)) return undefined;
    }
    return live;
  }, deadlineMs, 100);
}

/**
 * Waits until the CRD `name` reports Established. `kubectl wait
 * --for=condition=Established` right after the CRD's create can fail instead
 * of waiting (`.status.conditions accessor error: <nil> is of the type
 * <nil>`: kubectl reads a status the API server has not filled in yet as a
 * broken one), so the demo and the tests ask the API server themselves.
 */
export function untilEstablished(client: KubeClient, name: string, deadlineMs = 60_000): Promise<true> {
  return eventually(`CRD ${name} to be Established`, async () => {
    const live = await client.request('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
    return live.status?.conditions?.some((c: any) => c.type === 'Established' && c.status === 'True') ? true : undefined;
  }, deadlineMs, 100);
}
