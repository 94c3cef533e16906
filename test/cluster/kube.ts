/** Helpers for tests that run against the real kube-apiserver of the global setup. */
import { randomBytes } from 'node:crypto';
import { loadDefaultConfig } from '../../api/config.js';
import { customResourceDefinition } from '../../api/crd.js';
import { KubeApiError, KubeClient } from '../../kube/client.js';
import { refuseInFastLane } from './binaries.js';
import { establishCrd } from '../support/crds.js';
import { eventually } from '../support/eventually.js';

export { eventually };

refuseInFastLane('test/cluster/kube.ts (the control plane\'s tests) was imported');

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

/** Applies the DistributedKV CRD (generated with the default config) and waits until it can be used. */
export function installCrd(client: KubeClient): Promise<Record<string, any>> {
  return establishCrd(client, customResourceDefinition(loadDefaultConfig()));
}

export function isApiError(e: unknown, status?: number): e is KubeApiError {
  return e instanceof KubeApiError && (status === undefined || e.status === status);
}

/** Waits until the object at `path` is gone (the API server answers 404); `what` names it in a timeout. */
export function untilGone(client: KubeClient, path: string, what = path, deadlineMs = 20_000, intervalMs = 50): Promise<true> {
  return eventually(`${what} to be deleted`, async () => {
    try {
      await client.request('GET', path);
      return undefined;
    } catch (e) {
      if (isApiError(e, 404)) return true;
      throw e;
    }
  }, deadlineMs, intervalMs);
}
