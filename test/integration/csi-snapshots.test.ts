/**
 * Real CSI VolumeSnapshots on the test control plane: the snapshot controller
 * of kubernetes-csi/external-snapshotter (built by test/cluster/csi-snapshotter/build.sh)
 * creates and binds the VolumeSnapshotContents and drives deletion;
 * kube-controller-manager's PV controller binds the claims; TestCsiDriver
 * plays the CSI driver, the csi-snapshotter sidecar and the external-provisioner
 * with plain directories (test/support/csi-snapshots.ts says why and how).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeClient } from '../../kube/client.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { createNamespace, describeWithCluster, eventually, untilGone } from '../cluster/kube.js';
import {
  CONTENT_FINALIZER, createCsiStorageClasses, csiSnapshotterTools, PVC_AS_SOURCE_FINALIZER, SNAPSHOT_API, SNAPSHOT_AS_SOURCE_FINALIZER, SNAPSHOT_BOUND_FINALIZER,
  snapshotCrds, startSnapshotController, TestCsiDriver, type ClaimRef, type SnapshotController,
} from '../support/csi-snapshots.js';
import { LATER_BINARIES_BUILD_MS } from '../cluster/binaries.js';

const DRIVER = 'csi.dkv.test';
/** Between the cut (status.creationTime) and readyToUse: long enough for a 20 ms poll to see the snapshot cut but not ready. */
const READY_DELAY_MS = 1500;

describeWithCluster('real CSI VolumeSnapshots: external-snapshotter\'s snapshot-controller with a test CSI driver', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let namespace: string;
  let controller: SnapshotController | undefined;
  let driver: TestCsiDriver | undefined;
  let dir: string;
  let classes: { storageClass: string; snapshotClass: string };
  const volumePath = (claim: Pick<ClaimRef, 'uid'>) => join(dir, 'volumes', claim.uid);

  beforeAll(async () => {
    const tools = csiSnapshotterTools();
    // The CRDs before kube-controller-manager starts, so that its garbage collector knows the kinds from the start.
    plane = await startControlPlane(undefined, { withNodes: { count: 1, crds: snapshotCrds(tools) } });
    client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
    namespace = await createNamespace(client, 'csi');
    controller = await startSnapshotController(tools, plane);
    classes = await createCsiStorageClasses(client, DRIVER);
    dir = mkdtempSync(join(tmpdir(), 'dkv-csi-'));
    driver = new TestCsiDriver(client, { driver: DRIVER, volumePath, snapshotsDir: join(dir, 'snapshots'), readyDelayMs: READY_DELAY_MS });
    driver.start();
  }, 600_000 + LATER_BINARIES_BUILD_MS); // the first run builds snapshot-controller (~3.5 min on 2 cores); later runs: ~5 s

  afterAll(async () => {
    await driver?.stop();
    await controller?.stop();
    client?.close();
    await plane?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  afterEach(() => {
    expect(driver!.errors).toEqual([]);
  });

  const claimPath = (name?: string) => `/api/v1/namespaces/${namespace}/persistentvolumeclaims${name ? `/${name}` : ''}`;
  const snapshotPath = (name?: string) => `${SNAPSHOT_API}/namespaces/${namespace}/volumesnapshots${name ? `/${name}` : ''}`;
  const contentPath = (name: string) => `${SNAPSHOT_API}/volumesnapshotcontents/${name}`;

  const createClaim = (name: string, fromSnapshot?: string) => client.request('POST', claimPath(), {
    body: {
      apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name },
      spec: {
        storageClassName: classes.storageClass, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } },
        ...(fromSnapshot ? { dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: fromSnapshot } } : {}),
      },
    },
  });
  const bound = (name: string) => eventually(`claim ${name} to be Bound`, async () => {
    const claim = await client.request('GET', claimPath(name));
    return claim.status?.phase === 'Bound' ? claim : undefined;
  }, 30_000, 50);
  const createSnapshot = (name: string, claim: string) => client.request('POST', snapshotPath(), {
    body: { apiVersion: 'snapshot.storage.k8s.io/v1', kind: 'VolumeSnapshot', metadata: { name }, spec: { volumeSnapshotClassName: classes.snapshotClass, source: { persistentVolumeClaimName: claim } } },
  });
  const gone = (what: string, path: string) => untilGone(client, path, what, 30_000);
  /** A claim whose volume directory holds one file with fresh text. */
  const claimWithData = async (name: string): Promise<{ claim: any; text: string }> => {
    await createClaim(name);
    const claim = await bound(name);
    const text = `written into ${name}: ${randomBytes(8).toString('hex')}`;
    mkdirSync(volumePath(claim.metadata), { recursive: true });
    writeFileSync(join(volumePath(claim.metadata), 'data.txt'), text);
    return { claim, text };
  };

  it('binds a claim of the CSI class, snapshots it through the real controller, restores it, and deletes the snapshot with its content and data', async () => {
    // A claim of the CSI class is provisioned (a CSI PV for it) and bound by kube-controller-manager.
    const { claim: source, text } = await claimWithData('source');
    const pv = await client.request('GET', `/api/v1/persistentvolumes/${source.spec.volumeName}`);
    expect(pv.spec.csi).toEqual({ driver: DRIVER, volumeHandle: source.metadata.uid });
    expect(pv.spec.claimRef).toEqual(expect.objectContaining({ namespace, name: 'source', uid: source.metadata.uid }));
    expect(pv.status.phase).toBe('Bound');

    // The snapshot: watched every 20 ms, so the state between the cut and readiness is seen.
    const snapshot = await createSnapshot('snap', 'source');
    let cutBeforeReady: any;
    let sourceProtectedWhileCut = false;
    let readySeenAt = 0;
    const ready = await eventually('the VolumeSnapshot to be ready to use', async () => {
      const [current, claim] = [await client.request('GET', snapshotPath('snap')), await client.request('GET', claimPath('source'))];
      if (current.status?.creationTime && current.status.readyToUse === false) {
        cutBeforeReady ??= current;
        sourceProtectedWhileCut ||= (claim.metadata.finalizers ?? []).includes(PVC_AS_SOURCE_FINALIZER);
      }
      if (current.status?.readyToUse !== true) return undefined;
      readySeenAt = Date.now();
      return current;
    }, 30_000, 20);
    expect(cutBeforeReady?.status.boundVolumeSnapshotContentName).toBe(`snapcontent-${snapshot.metadata.uid}`);
    // The claim is protected while a snapshot of it is being taken, and released once that snapshot is ready.
    expect(sourceProtectedWhileCut).toBe(true);
    await eventually('the source claim to lose its as-source finalizer', async () => {
      const claim = await client.request('GET', claimPath('source'));
      return (claim.metadata.finalizers ?? []).includes(PVC_AS_SOURCE_FINALIZER) ? undefined : true;
    }, 10_000, 50);

    // The content was made by the snapshot controller (the test driver only ever patches contents) from the claim's PV.
    const content = await client.request('GET', contentPath(ready.status.boundVolumeSnapshotContentName));
    const specOwners = content.metadata.managedFields.filter((f: any) => f.fieldsV1?.['f:spec']).map((f: any) => f.manager);
    expect(specOwners).toEqual(['snapshot-controller']);
    expect(content.spec).toEqual(expect.objectContaining({
      driver: DRIVER, deletionPolicy: 'Delete', volumeSnapshotClassName: classes.snapshotClass,
      source: { volumeHandle: source.metadata.uid },
      volumeSnapshotRef: expect.objectContaining({ kind: 'VolumeSnapshot', namespace, name: 'snap', uid: snapshot.metadata.uid }),
    }));
    expect(content.metadata.finalizers).toEqual([CONTENT_FINALIZER]);
    expect(ready.metadata.finalizers).toEqual(expect.arrayContaining([SNAPSHOT_AS_SOURCE_FINALIZER, SNAPSHOT_BOUND_FINALIZER]));
    // The status the driver wrote on the content, copied to the snapshot by the controller.
    const handle: string = content.status.snapshotHandle;
    expect(handle).toBe(`snap-${content.metadata.uid}`);
    expect(content.status.readyToUse).toBe(true);
    expect(content.status.restoreSize).toBe(2 ** 30);
    expect(ready.status.restoreSize).toBe('1Gi');
    const cutMillis = content.status.creationTime / 1e6;
    expect(Date.parse(ready.status.creationTime)).toBe(Math.floor(cutMillis / 1000) * 1000); // metav1.Time: whole seconds
    expect(readySeenAt - cutMillis).toBeGreaterThanOrEqual(READY_DELAY_MS);
    expect(readFileSync(join(driver!.snapshotPath(handle), 'data.txt'), 'utf8')).toBe(text);

    // Written after the cut: not in the snapshot, so not in a volume restored from it.
    writeFileSync(join(volumePath(source.metadata), 'data.txt'), 'changed after the snapshot');
    await createClaim('restored', 'snap');
    const restored = await bound('restored');
    expect(restored.spec.dataSource).toEqual({ apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'snap' });
    expect(readFileSync(join(volumePath(restored.metadata), 'data.txt'), 'utf8')).toBe(text);

    // Deleting the VolumeSnapshot: the controller marks and deletes the content, the driver deletes the data and lets the content go.
    await client.request('DELETE', snapshotPath('snap'));
    await gone('the VolumeSnapshotContent', contentPath(content.metadata.name));
    await gone('the VolumeSnapshot', snapshotPath('snap'));
    expect(existsSync(driver!.snapshotPath(handle))).toBe(false);
    // The restored volume is a copy: it outlives the snapshot.
    expect(readFileSync(join(volumePath(restored.metadata), 'data.txt'), 'utf8')).toBe(text);
  }, 60_000);

  it('keeps a claim restoring from a snapshot Pending until that snapshot exists and is ready, then restores it', async () => {
    await createClaim('early', 'later');
    const key = `${namespace}/early`;
    await eventually('the driver to wait for the missing snapshot', async () => (driver!.waiting.get(key)?.includes('not found') ? true : undefined), 10_000, 20);
    const early = await client.request('GET', claimPath('early'));
    expect(early.status.phase).toBe('Pending');
    expect(early.spec.volumeName).toBeUndefined();

    const { text } = await claimWithData('origin');
    await createSnapshot('later', 'origin');
    const reasons = new Set<string>();
    const restored = await eventually('the early claim to be Bound', async () => {
      const reason = driver!.waiting.get(key);
      if (reason) reasons.add(reason.replace(/^VolumeSnapshot \S+ /, ''));
      const claim = await client.request('GET', claimPath('early'));
      return claim.status?.phase === 'Bound' ? claim : undefined;
    }, 30_000, 20);
    // Seen while the snapshot was cut but not yet ready (READY_DELAY_MS).
    expect(reasons).toContain('is not ready to use');
    expect(readFileSync(join(volumePath(restored.metadata), 'data.txt'), 'utf8')).toBe(text);

    await client.request('DELETE', snapshotPath('later'));
    await gone('the VolumeSnapshot', snapshotPath('later'));
  }, 60_000);
});
