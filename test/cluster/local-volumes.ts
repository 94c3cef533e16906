/**
 * A dynamic provisioner of local volumes for the real node (issue 33): a
 * StorageClass whose claims become directories on the node, each the `local`
 * PersistentVolume of one claim, pinned to the node by its nodeAffinity.
 *
 * What a CSI driver's provisioner and rancher's local-path-provisioner do, in
 * the test process: once the scheduler has picked a node for a pod that uses a
 * claim (WaitForFirstConsumer: the `volume.kubernetes.io/selected-node`
 * annotation), it makes the directory and a PersistentVolume bound to that
 * claim in advance (claimRef), which kube-controller-manager's binder then
 * completes; once a claim is deleted and its volume Released, it removes the
 * directory and the volume (reclaim policy Delete).
 *
 * Why not local-path-provisioner itself: it makes and removes directories
 * through a helper pod of a busybox image (a shell, mkdir, rm), which no
 * registry here can give and which would have to be assembled from a static
 * busybox; and its volumes are `hostPath`, to which the kubelet applies no
 * fsGroup: a directory made world-writable (its 0777) hides exactly the
 * ownership question this node is here to answer. A fresh directory owned by
 * root, 0755, as a new filesystem's root is, handed out as a `local` volume,
 * is what a cloud disk gives a pod: writable by a non-root member only
 * through the pod's fsGroup.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { KubeApiError, type KubeClient } from '../../kube/client.js';

/** The provisioner's name, in the StorageClass and the PVs' `pv.kubernetes.io/provisioned-by`. */
export const LOCAL_VOLUME_PROVISIONER = 'dkv.example.com/local-directory';
const SELECTED_NODE = 'volume.kubernetes.io/selected-node';
const PROVISIONED_BY = 'pv.kubernetes.io/provisioned-by';

export interface LocalVolumesOptions {
  /** The node whose directories these are: only claims the scheduler placed there are provisioned. */
  readonly nodeName: string;
  /** Where the volumes' directories go (one per claim, named after it). */
  readonly dir: string;
  /** @default 'dkv-local' */
  readonly storageClass?: string;
  /** Make it the cluster's default class, for claims that name none. @default true */
  readonly isDefault?: boolean;
  /** @default 200 */
  readonly pollMillis?: number;
}

export interface LocalVolumes {
  readonly storageClass: string;
  /** The directory backing a bound claim's volume. */
  directoryOf(namespace: string, claim: string): Promise<string>;
  /** Stops provisioning (the StorageClass and the volumes stay: the control plane goes away with them). */
  stop(): Promise<void>;
}

/** The directory of one claim: its namespace, name and uid (a claim made again gets a new directory, as a new disk). */
const directoryName = (pvc: any): string => `${pvc.metadata.namespace}_${pvc.metadata.name}_${pvc.metadata.uid}`;

/** The PersistentVolume for `pvc`, on `nodeName`, at `path`, bound to the claim in advance. */
export function localVolumeFor(pvc: any, storageClass: any, nodeName: string, path: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: `pvc-${pvc.metadata.uid}`, annotations: { [PROVISIONED_BY]: LOCAL_VOLUME_PROVISIONER } },
    spec: {
      capacity: { storage: pvc.spec.resources.requests.storage },
      accessModes: pvc.spec.accessModes,
      volumeMode: pvc.spec.volumeMode ?? 'Filesystem',
      persistentVolumeReclaimPolicy: storageClass.reclaimPolicy ?? 'Delete',
      storageClassName: storageClass.metadata.name,
      claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: pvc.metadata.namespace, name: pvc.metadata.name, uid: pvc.metadata.uid },
      local: { path },
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [nodeName] }] }] } },
    },
  };
}

/** Creates the StorageClass (WaitForFirstConsumer, Delete) and provisions its claims until stopped. */
export async function startLocalVolumes(client: KubeClient, options: LocalVolumesOptions): Promise<LocalVolumes> {
  const storageClass = options.storageClass ?? 'dkv-local';
  const klass = {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: storageClass, annotations: { 'storageclass.kubernetes.io/is-default-class': String(options.isDefault ?? true) } },
    provisioner: LOCAL_VOLUME_PROVISIONER,
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'WaitForFirstConsumer',
  };
  await client.request('POST', '/apis/storage.k8s.io/v1/storageclasses', { body: klass }).catch((e) => {
    if (!(e instanceof KubeApiError && e.status === 409)) throw e;
  });
  mkdirSync(options.dir, { recursive: true });

  const provision = async (): Promise<void> => {
    const claims = await client.request('GET', '/api/v1/persistentvolumeclaims');
    for (const pvc of claims.items as any[]) {
      if (pvc.spec.storageClassName !== storageClass || pvc.spec.volumeName || pvc.metadata.deletionTimestamp) continue;
      if (pvc.metadata.annotations?.[SELECTED_NODE] !== options.nodeName) continue;
      // Root's, 0755: a new filesystem's root. The pod's fsGroup is what lets a non-root member write.
      const path = join(options.dir, directoryName(pvc));
      mkdirSync(path, { recursive: true, mode: 0o755 });
      await client.request('POST', '/api/v1/persistentvolumes', { body: localVolumeFor(pvc, klass, options.nodeName, path) }).catch((e) => {
        if (!(e instanceof KubeApiError && e.status === 409)) throw e;
      });
    }
    const volumes = await client.request('GET', '/api/v1/persistentvolumes');
    for (const pv of volumes.items as any[]) {
      if (pv.metadata.annotations?.[PROVISIONED_BY] !== LOCAL_VOLUME_PROVISIONER || pv.spec.storageClassName !== storageClass) continue;
      if (pv.status?.phase !== 'Released' || pv.spec.persistentVolumeReclaimPolicy !== 'Delete') continue;
      rmSync(pv.spec.local.path, { recursive: true, force: true });
      await client.request('DELETE', `/api/v1/persistentvolumes/${pv.metadata.name}`).catch((e) => {
        if (!(e instanceof KubeApiError && e.status === 404)) throw e;
      });
    }
  };

  let stopped = false;
  let lastError: unknown;
  const loop = (async () => {
    while (!stopped) {
      try {
        await provision();
        lastError = undefined;
      } catch (e) {
        lastError = e; // the API server restarting, a claim deleted meanwhile: the next round sees the new state
      }
      await new Promise((resolve) => setTimeout(resolve, options.pollMillis ?? 200));
    }
  })();

  return {
    storageClass,
    async directoryOf(namespace, claim) {
      const pvc = await client.request('GET', `/api/v1/namespaces/${namespace}/persistentvolumeclaims/${claim}`);
      if (!pvc.spec.volumeName) throw new Error(`claim ${namespace}/${claim} is not bound${lastError ? ` (provisioner: ${String(lastError)})` : ''}`);
      const pv = await client.request('GET', `/api/v1/persistentvolumes/${pvc.spec.volumeName}`);
      return pv.spec.local.path;
    },
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
