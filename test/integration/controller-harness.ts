/**
 * Runs a controller in-process against the test control plane, scoped to one
 * namespace so tests in parallel never see each other's clusters.
 */
import { createLogger } from '../../kube/log.js';
import { loadDefaultConfig, type GeneratorConfig } from '../../api/config.js';
import { API_VERSION, KIND } from '../../api/validate.js';
import { Controller, type ControllerOptions } from '../../reconciler/core/controller.js';
import { KubeClient, resourcePath } from '../../kube/client.js';
import { customResourceDefinition } from '../../api/crd.js';
import { MUTATING_VERBS, requestCounts, splitKey } from '../cluster/apiserver-metrics.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { createNamespace, eventually, installCrd, isApiError } from '../cluster/kube.js';

/**
 * The drift-correcting core's tests run the generic engine: under kwok no
 * store runs, and the etcd engine's membership steps need one. Those are
 * tested with real etcd members in etcd-membership.test.ts; rbac.test.ts and
 * controller-resilience.test.ts run `dkv controller` with the default (etcd).
 */
export const config: GeneratorConfig = { ...loadDefaultConfig(), engine: 'generic' };

export interface RunningController {
  readonly controller: Controller;
  stop(): Promise<void>;
}

/**
 * Starts caches and workers; retries start at 200 ms so failure tests stay fast (production: 2 s).
 * `sharded`: as one replica of `dkv controller --shards` that holds every bucket (its caches select
 * by the bucket label), without the membership Leases.
 */
export async function startController(
  client: KubeClient,
  namespace: string,
  options: { backoffBaseMs?: number; workers?: number; sharded?: boolean } & Partial<Pick<ControllerOptions, 'config' | 'fieldFights' | 'objectConflictRecheckMs'>> = {},
): Promise<RunningController> {
  const log = createLogger(process.env.DKV_TEST_LOG_LEVEL ?? 'silent');
  const controllerConfig = options.config ?? config;
  const controller = new Controller({
    client, config: controllerConfig, log, namespace, workers: options.workers ?? 2, backoff: { baseMs: options.backoffBaseMs ?? 200, maxMs: 5000 },
    fieldFights: options.fieldFights, objectConflictRecheckMs: options.objectConflictRecheckMs,
    sharding: options.sharded ? { mayWork: () => true, retryMs: 200 } : undefined,
  });
  await controller.startCaches();
  if (options.sharded) await controller.setShare([...Array(controllerConfig.sharding.buckets).keys()]);
  await controller.startWorkers();
  return { controller, stop: () => controller.stop() };
}

export function clusterPath(namespace: string, name?: string): string {
  return resourcePath(API_VERSION, KIND, namespace, name);
}

export async function createCluster(client: KubeClient, namespace: string, name: string, spec: Record<string, unknown>, annotations?: Record<string, string>): Promise<any> {
  return client.request('POST', clusterPath(namespace), { body: { apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace, annotations }, spec } });
}

/** Waits until the CR's status describes its current generation with every generated object listed. */
export async function converged(client: KubeClient, namespace: string, name: string, objects: number, deadlineMs = 30_000): Promise<any> {
  return eventually(`${namespace}/${name} to converge`, async () => {
    const cr = await client.request('GET', clusterPath(namespace, name));
    const ok = cr.status?.observedGeneration === cr.metadata.generation && cr.status?.generatedObjects?.length === objects && cr.status.generatedObjects.every((o: { uid?: string }) => o.uid);
    return ok ? cr : undefined;
  }, deadlineMs);
}

/** A cluster's Degraded condition, if it has one. */
export function degradedCondition(cr: any): { status: string; reason: string; message: string } | undefined {
  return cr?.status?.conditions?.find((c: any) => c.type === 'Degraded');
}

/** Waits until a cluster reports Degraded for `reason` about its current generation; returns it. */
export async function degradedWith(client: KubeClient, namespace: string, name: string, reason: string): Promise<any> {
  return eventually(`${name} to be Degraded/${reason}`, async () => {
    const cr = await client.request('GET', clusterPath(namespace, name));
    return degradedCondition(cr)?.reason === reason && cr.status.observedGeneration === cr.metadata.generation ? cr : undefined;
  });
}

/** Whether the API server holds the object (a 404 is false, any other error is thrown). */
export async function objectExists(client: KubeClient, apiVersion: string, kind: string, namespace: string, name: string): Promise<boolean> {
  try {
    await client.request('GET', resourcePath(apiVersion, kind, namespace, name));
    return true;
  } catch (e) {
    if (isApiError(e, 404)) return false;
    throw e;
  }
}

/** Events recorded on one DistributedKV, oldest first. */
export async function eventsFor(client: KubeClient, namespace: string, name: string): Promise<any[]> {
  const list = await client.request('GET', `/api/v1/namespaces/${namespace}/events`, { query: { fieldSelector: `involvedObject.name=${name},involvedObject.kind=${KIND}` } });
  return list.items.sort((a: any, b: any) => String(a.metadata.creationTimestamp).localeCompare(String(b.metadata.creationTimestamp)));
}

/** Sum of the API server's own apiserver_request_total for mutating verbs, excluding the kinds named. */
export async function mutatingRequests(client: KubeClient, excludeResources: readonly string[] = ['leases', 'events']): Promise<number> {
  let total = 0;
  for (const [key, count] of await requestCounts(client)) {
    const { verb, resource } = splitKey(key);
    if (MUTATING_VERBS.has(verb) && !excludeResources.includes(resource)) total += count;
  }
  return total;
}

/**
 * A control plane of its own for tests whose pods must really run (the shared
 * one has no kube-controller-manager, scheduler or nodes), with the CRD
 * there before kube-controller-manager starts, so its garbage collector
 * watches DistributedKVs from the start; a client, and a fresh namespace.
 */
export async function startPlaneWithNodes(namespacePrefix: string): Promise<{ plane: ControlPlane; client: KubeClient; namespace: string }> {
  const plane = await startControlPlane(undefined, { withNodes: { crds: [customResourceDefinition(loadDefaultConfig()) as Record<string, unknown>] } });
  const client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
  await installCrd(client);
  return { plane, client, namespace: await createNamespace(client, namespacePrefix) };
}
