/**
 * test/cluster/local-volumes.ts, the real node's provisioner, on kwok's lane:
 * a claim of its class is provisioned only once the scheduler has placed a
 * pod that uses it (WaitForFirstConsumer), on the node the scheduler chose,
 * as a root-owned 0755 directory (a new disk's root: the pod's fsGroup is
 * what makes it writable) behind a `local` PersistentVolume pinned to that
 * node, which kube-controller-manager binds; deleting the claim removes the
 * volume and its directory. kwok's nodes run no containers, so nothing here
 * needs the real node: in the default suite, ~10 s.
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeClient } from '../../kube/client.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { describeWithCluster, eventually } from '../cluster/kube.js';
import { LOCAL_VOLUME_PROVISIONER, startLocalVolumes, type LocalVolumes } from '../cluster/local-volumes.js';

describeWithCluster('the real node\'s local volume provisioner', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let volumes: LocalVolumes;
  let dir: string;
  const ns = 'default';

  beforeAll(async () => {
    plane = await startControlPlane(undefined, { withNodes: { count: 2 } });
    client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
    dir = mkdtempSync(join(tmpdir(), 'dkv-local-volumes-'));
    // Not the default class: kwok's `kwok-volume` is.
    volumes = await startLocalVolumes(client, { nodeName: 'kwok-node-1', dir, isDefault: false });
  }, 180_000);

  afterAll(async () => {
    await volumes?.stop();
    client?.close();
    await plane?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const claim = (name: string) => ({
    apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace: ns },
    spec: { storageClassName: volumes.storageClass, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
  });
  const podUsing = (name: string, pvc: string) => ({
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns },
    spec: {
      // The scheduler may only pick the provisioner's node.
      nodeSelector: { 'kubernetes.io/hostname': 'kwok-node-1' },
      containers: [{ name: 'c', image: 'example/none:1' }],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: pvc } }],
    },
  });
  const getClaim = (name: string) => client.request('GET', `/api/v1/namespaces/${ns}/persistentvolumeclaims/${name}`);

  test('provisions nothing for a claim no pod uses yet, then a root-owned local volume on the scheduled node, bound by the binder', async () => {
    await client.request('POST', `/api/v1/namespaces/${ns}/persistentvolumeclaims`, { body: claim('data-a') });
    // Several provisioner rounds: still nothing, as WaitForFirstConsumer means.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await getClaim('data-a')).status.phase).toBe('Pending');
    expect((await client.request('GET', '/api/v1/persistentvolumes')).items).toHaveLength(0);

    await client.request('POST', `/api/v1/namespaces/${ns}/pods`, { body: podUsing('user-a', 'data-a') });
    const bound = await eventually('data-a to be Bound', async () => {
      const pvc = await getClaim('data-a');
      return pvc.status.phase === 'Bound' ? pvc : undefined;
    }, 60_000, 200);
    expect(bound.metadata.annotations['volume.kubernetes.io/selected-node']).toBe('kwok-node-1');
    const pv = await client.request('GET', `/api/v1/persistentvolumes/${bound.spec.volumeName}`);
    expect(pv.metadata.annotations['pv.kubernetes.io/provisioned-by']).toBe(LOCAL_VOLUME_PROVISIONER);
    expect(pv.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0]).toEqual({ key: 'kubernetes.io/hostname', operator: 'In', values: ['kwok-node-1'] });
    expect(pv.spec.capacity.storage).toBe('1Gi');
    const path = await volumes.directoryOf(ns, 'data-a');
    expect(path).toBe(pv.spec.local.path);
    expect(path.startsWith(dir)).toBe(true);
    const stat = statSync(path);
    expect([stat.uid, stat.gid, stat.mode & 0o7777]).toEqual([0, 0, 0o755]);
  }, 90_000);

  test('a deleted claim\'s volume is Released, then removed with its directory (reclaim policy Delete)', async () => {
    const path = await volumes.directoryOf(ns, 'data-a');
    const pvName = (await getClaim('data-a')).spec.volumeName;
    await client.request('DELETE', `/api/v1/namespaces/${ns}/pods/user-a`, { query: { gracePeriodSeconds: 0 } });
    await client.request('DELETE', `/api/v1/namespaces/${ns}/persistentvolumeclaims/data-a`);
    await eventually('the volume to be deleted', async () => {
      const list = await client.request('GET', '/api/v1/persistentvolumes');
      return (list.items as any[]).some((v) => v.metadata.name === pvName) ? undefined : true;
    }, 60_000, 200);
    expect(existsSync(path)).toBe(false);
  }, 90_000);
});
