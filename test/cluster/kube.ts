/** Helpers for tests that run against the real kube-apiserver of the global setup. */
import { randomBytes } from 'node:crypto';
import { loadDefaultConfig } from '../../api/config.js';
import { customResourceDefinition } from '../../api/crd.js';
import { KubeApiError, KubeClient } from '../../kube/client.js';

export const clusterAvailable = Boolean(process.env.DKV_TEST_KUBECONFIG);

/** `describe` when a control plane is running, `describe.skip` otherwise (global setup already said why, loudly). */
export const describeWithCluster: jest.Describe = clusterAvailable ? describe : describe.skip;

export function testClient(): KubeClient {
  return KubeClient.fromKubeconfig(process.env.DKV_TEST_KUBECONFIG);
}

/** A fresh namespace for one test file or test, so tests never see each other's objects. */
export async function createNamespace(client: KubeClient, prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await client.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } });
  return name;
}

/** Polls `check` until it returns a value other than undefined; fails with `what` after the deadline. Never a fixed sleep. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined>, deadlineMs = 20_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Applies the DistributedKV CRD (generated with the default config) and waits until it is Established. */
export async function installCrd(client: KubeClient): Promise<Record<string, any>> {
  const crd = customResourceDefinition(loadDefaultConfig()) as { metadata: { name: string } } & Record<string, any>;
  await client.apply(crd as any, { fieldManager: 'dkv-test', force: true });
  return eventually('the DistributedKV CRD to be Established', async () => {
    const live = await client.request('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`);
    const established = live.status?.conditions?.find((c: any) => c.type === 'Established')?.status === 'True';
    return established ? live : undefined;
  });
}

export function isApiError(e: unknown, status?: number): e is KubeApiError {
  return e instanceof KubeApiError && (status === undefined || e.status === status);
}
