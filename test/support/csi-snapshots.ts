/**
 * Real CSI VolumeSnapshots on the test control plane.
 *
 * The snapshot controller is the real one (snapshot-controller from
 * kubernetes-csi/external-snapshotter, built from the Go module proxy by
 * test/cluster/csi-snapshotter/build.sh, with its VolumeSnapshot CRDs): it
 * creates each VolumeSnapshot's VolumeSnapshotContent, puts its finalizers on
 * the snapshot, the content and the source claim, copies the content's status
 * back to the snapshot and drives deletion. TestCsiDriver plays the rest.
 *
 * How a dynamically provisioned snapshot goes (read from the v8.7.0 sources):
 *  1. VolumeSnapshot (source.persistentVolumeClaimName, volumeSnapshotClassName):
 *     the controller waits until the claim is Bound to a PV with spec.csi
 *     (`the PVC … is not yet bound`, retried with backoff), puts
 *     `snapshot.storage.kubernetes.io/pvc-as-source-protection` on the claim and
 *     `…/volumesnapshot-as-source-protection` on the snapshot, and creates the
 *     VolumeSnapshotContent `snapcontent-<snapshot uid>` (spec.driver and
 *     deletionPolicy from the class, source.volumeHandle from the PV).
 *  2. It adds `…/volumesnapshotcontent-bound-protection` to the content and
 *     `…/volumesnapshot-bound-protection` to the snapshot (deletionPolicy Delete).
 *  3. The csi-snapshotter sidecar (here: TestCsiDriver) annotates the content
 *     `…/volumesnapshot-being-created: yes`, cuts the snapshot, patches the
 *     content's /status (snapshotHandle, creationTime in unix ns, restoreSize,
 *     readyToUse) and removes the annotation; it sets readyToUse later if the
 *     driver said "not yet".
 *  4. The controller copies creationTime/readyToUse/restoreSize to the
 *     snapshot's status, and once ready drops the claim's finalizer.
 * Deletion of a VolumeSnapshot: the controller annotates its content
 * `…/volumesnapshot-being-deleted: yes` and deletes it; the sidecar deletes the
 * snapshot on the storage (DeleteSnapshot), clears the content's status
 * (snapshotHandle, creationTime, readyToUse, restoreSize) and removes the
 * content's bound-protection finalizer; the content goes, and the controller
 * then removes the snapshot's finalizers, so the snapshot goes.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { packageRoot } from '../../api/package-root.js';
import { KubeApiError, KubeClient } from '../../kube/client.js';
import { quantityValue } from '../../model/quantity.js';
import { exitDescription, freePort, launch, terminate } from '../cluster/control-plane.js';
import { establishCrd } from './crds.js';
import { eventually, yes } from './eventually.js';
import { httpProbe } from './http-probe.js';

export const SNAPSHOT_API = '/apis/snapshot.storage.k8s.io/v1';
export const CONTENT_FINALIZER = 'snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection';
export const SNAPSHOT_BOUND_FINALIZER = 'snapshot.storage.kubernetes.io/volumesnapshot-bound-protection';
export const SNAPSHOT_AS_SOURCE_FINALIZER = 'snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection';
export const PVC_AS_SOURCE_FINALIZER = 'snapshot.storage.kubernetes.io/pvc-as-source-protection';
export const ANN_BEING_CREATED = 'snapshot.storage.kubernetes.io/volumesnapshot-being-created';
export const ANN_BEING_DELETED = 'snapshot.storage.kubernetes.io/volumesnapshot-being-deleted';
const ANN_GROUP_SNAPSHOT_HANDLE = 'groupsnapshot.storage.k8s.io/volumeGroupSnapshotHandle';

/** The directory holding snapshot-controller and crds/ (built once, then a cache hit). */
export function csiSnapshotterTools(): string {
  const out = execFileSync('bash', [join(packageRoot(), 'test', 'cluster', 'csi-snapshotter', 'build.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return out.trim().split('\n').at(-1)!;
}

/** The three VolumeSnapshot CRDs (classes, contents, snapshots) from `<binDir>/crds/`: also for the nodes' `crds` option. */
export function snapshotCrds(binDir: string): Record<string, any>[] {
  const dir = join(binDir, 'crds');
  const crds = readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort()
    .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS()).filter((o) => o?.kind === 'CustomResourceDefinition'));
  if (crds.length !== 3) throw new Error(`expected 3 VolumeSnapshot CRDs in ${dir}, found ${crds.length}`);
  return crds;
}

export interface SnapshotController {
  readonly logFile: string;
  /** Stops the process. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Installs the VolumeSnapshot CRDs (waiting until they are Established and
 * discoverable) and starts snapshot-controller with the control plane's admin
 * kubeconfig: no leader election, its metrics server on loopback only (its
 * answer is the readiness signal: it starts after the controller found the
 * CRDs), log in `<plane.dir>/snapshot-controller.log`.
 */
export async function startSnapshotController(binDir: string, plane: { readonly dir: string; readonly kubeconfigPath: string }): Promise<SnapshotController> {
  const client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
  try {
    for (const crd of snapshotCrds(binDir)) await establishCrd(client, crd);
  } finally {
    client.close();
  }
  const port = await freePort();
  const logFile = join(plane.dir, 'snapshot-controller.log');
  const child: ChildProcess = launch(join(binDir, 'snapshot-controller'), [
    `--kubeconfig=${plane.kubeconfigPath}`,
    '--leader-election=false',
    `--http-endpoint=127.0.0.1:${port}`,
    // VolumeGroupSnapshot is GA and on by default: without its CRDs the controller would wait
    // --retry-crd-interval-max (30 s) for them before going on without.
    '--feature-gates=CSIVolumeGroupSnapshot=false',
    // Defaults are 1 s doubling up to 5 min: a snapshot of a claim not yet Bound would be retried too late for a test.
    '--retry-interval-start=100ms',
    '--retry-interval-max=2s',
    '--kube-api-qps=100',
    '--kube-api-burst=200',
    '--v=4',
  ], logFile);
  try {
    await eventually('snapshot-controller to serve /metrics', async () => yes((await httpProbe(`http://127.0.0.1:${port}/metrics`)).status === 200), 60_000, 100, () => exitDescription(child, logFile));
  } catch (e) {
    await terminate(child);
    throw e;
  }
  return { logFile, stop: () => terminate(child) };
}

/**
 * A StorageClass whose provisioner is `driver` (Immediate binding, reclaim
 * Delete) and a VolumeSnapshotClass of the same driver with deletionPolicy
 * Delete. Existing ones are kept (a second test file on the same plane).
 */
export async function createCsiStorageClasses(
  client: KubeClient, driver: string, names: { storageClass?: string; snapshotClass?: string } = {},
): Promise<{ storageClass: string; snapshotClass: string }> {
  const storageClass = names.storageClass ?? 'dkv-test-csi';
  const snapshotClass = names.snapshotClass ?? 'dkv-test-snapshots';
  await createIfAbsent(client, '/apis/storage.k8s.io/v1/storageclasses', {
    apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: storageClass },
    provisioner: driver, reclaimPolicy: 'Delete', volumeBindingMode: 'Immediate',
  });
  await createIfAbsent(client, `${SNAPSHOT_API}/volumesnapshotclasses`, {
    apiVersion: 'snapshot.storage.k8s.io/v1', kind: 'VolumeSnapshotClass', metadata: { name: snapshotClass },
    driver, deletionPolicy: 'Delete',
  });
  return { storageClass, snapshotClass };
}

async function createIfAbsent(client: KubeClient, path: string, object: unknown): Promise<void> {
  await client.request('POST', path, { body: object }).catch((e) => {
    if (!(e instanceof KubeApiError && e.status === 409)) throw e;
  });
}

async function getOrUndefined(client: KubeClient, path: string): Promise<any> {
  return client.request('GET', path).catch((e) => {
    if (e instanceof KubeApiError && e.status === 404) return undefined;
    throw e;
  });
}

export interface ClaimRef {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

export interface TestCsiDriverOptions {
  /** The CSI driver name: StorageClasses' provisioner, VolumeSnapshotClasses' and PVs' driver (e.g. `csi.dkv.test`). */
  readonly driver: string;
  /** The directory holding a claim's data; owned by the test's pod-running loop (it need not exist yet). */
  readonly volumePath: (claim: ClaimRef) => string;
  /** Where snapshots are kept: `<snapshotsDir>/<snapshotHandle>/`, a copy of the volume's directory. */
  readonly snapshotsDir: string;
  /** Time between cutting a snapshot (status.creationTime, readyToUse false) and readyToUse true. Default 0: the next poll. */
  readonly readyDelayMs?: number;
  /** Poll interval (default 100 ms). */
  readonly intervalMs?: number;
}

/**
 * Plays the CSI driver, the csi-snapshotter sidecar and the external-provisioner
 * for one driver name, which no component can here, because no CSI driver can
 * run without a kubelet (and no kubelet runs: kwok plays the nodes). Volumes
 * and snapshots are plain directories: a volume is `volumePath(claim)`, a
 * snapshot is a recursive copy of it in `<snapshotsDir>/<handle>`.
 *
 * Every poll (100 ms, until stop()):
 *  - provisioning (external-provisioner + CreateVolume): each Pending claim
 *    of a StorageClass whose provisioner is the driver gets a PV
 *    `pvc-<claim uid>` (csi.driver, csi.volumeHandle = claim uid, claimRef
 *    with the claim's uid, capacity = request), which kube-controller-manager's
 *    PV controller binds. A claim whose dataSource(Ref) is a VolumeSnapshot gets
 *    the snapshot's directory copied into its volume directory first; while the
 *    snapshot is missing, being deleted, not ready, or its content is not this
 *    driver's, the claim stays Pending (`waiting` says why), as with a real
 *    provisioner that retries. Released PVs of the driver with reclaim policy
 *    Delete are deleted (their directories are left to the test).
 *  - snapshots (csi-snapshotter sidecar + CreateSnapshot): each
 *    VolumeSnapshotContent of the driver with source.volumeHandle and no
 *    status is annotated being-created, the source claim's directory (PV by
 *    volumeHandle → claimRef) is copied to `<snapshotsDir>/snap-<content uid>`,
 *    /status gets snapshotHandle, creationTime (unix ns), restoreSize (the PV's
 *    capacity) and readyToUse false, and the annotation is removed;
 *    `readyDelayMs` later, readyToUse true.
 *  - deletion (sidecar + DeleteSnapshot): a content being deleted that the
 *    controller annotated being-deleted (and that is not being created) with
 *    deletionPolicy Delete has its directory removed and its status cleared;
 *    then (any policy) its bound-protection finalizer is removed.
 */
export class TestCsiDriver {
  /** Failures of a poll other than conflicts (retried next poll), in order: a test can expect none. */
  readonly errors: string[] = [];
  /** Claims left Pending on purpose, `namespace/name` → why (a real provisioner's ProvisioningFailed event). */
  readonly waiting = new Map<string, string>();
  private readonly readyAt = new Map<string, number>();
  private stopped = false;
  private loop?: Promise<void>;
  private readonly driver: string;
  private readonly readyDelayMs: number;
  private readonly intervalMs: number;

  constructor(private readonly client: KubeClient, private readonly options: TestCsiDriverOptions) {
    this.driver = options.driver;
    this.readyDelayMs = options.readyDelayMs ?? 0;
    this.intervalMs = options.intervalMs ?? 100;
    mkdirSync(options.snapshotsDir, { recursive: true });
  }

  start(): void {
    if (this.loop) return;
    this.stopped = false;
    this.loop = (async () => {
      while (!this.stopped) {
        // A conflict (an object changed since it was read) is what a controller requeues on: the next poll retries it.
        await this.sync().catch((e: Error) => {
          if (!(e instanceof KubeApiError && e.status === 409)) this.errors.push(e.message);
        });
        if (!this.stopped) await new Promise((r) => setTimeout(r, this.intervalMs));
      }
    })();
  }

  /** Ends the loop after the poll under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    this.loop = undefined;
  }

  /** Where a snapshot's data is kept. */
  snapshotPath(handle: string): string {
    return join(this.options.snapshotsDir, handle);
  }

  private async sync(): Promise<void> {
    const classes = ((await this.client.request('GET', '/apis/storage.k8s.io/v1/storageclasses')).items as any[]).filter((c) => c.provisioner === this.driver);
    const pvs = ((await this.client.request('GET', '/api/v1/persistentvolumes')).items as any[]).filter((pv) => pv.spec?.csi?.driver === this.driver);
    if (classes.length > 0) await this.provision(new Map(classes.map((c) => [c.metadata.name as string, c])));
    await this.deleteReleased(pvs);
    await this.snapshots(pvs);
  }

  // ------------------------------------------------------------ external-provisioner

  private async provision(classes: Map<string, any>): Promise<void> {
    const claims = (await this.client.request('GET', '/api/v1/persistentvolumeclaims')).items as any[];
    for (const claim of claims) {
      const key = `${claim.metadata.namespace}/${claim.metadata.name}`;
      const storageClass = classes.get(claim.spec.storageClassName);
      if (!storageClass || claim.metadata.deletionTimestamp || claim.spec.volumeName || (claim.status?.phase ?? 'Pending') !== 'Pending') {
        this.waiting.delete(key);
        continue;
      }
      const ref: ClaimRef = { namespace: claim.metadata.namespace, name: claim.metadata.name, uid: claim.metadata.uid };
      const pvName = `pvc-${ref.uid}`;
      if (await getOrUndefined(this.client, `/api/v1/persistentvolumes/${pvName}`)) continue; // made, not bound yet
      const source = claim.spec.dataSourceRef ?? claim.spec.dataSource;
      const volume = this.options.volumePath(ref);
      if (source) {
        if (source.kind !== 'VolumeSnapshot' || source.apiGroup !== 'snapshot.storage.k8s.io') {
          this.waiting.set(key, `data source ${source.apiGroup ?? ''}/${source.kind} is not supported`);
          continue;
        }
        const handle = await this.restorableSnapshot(source.namespace ?? ref.namespace, source.name, claim);
        if (typeof handle !== 'object') {
          this.waiting.set(key, handle);
          continue;
        }
        rmSync(volume, { recursive: true, force: true });
        cpSync(this.snapshotPath(handle.handle), volume, { recursive: true });
      } else {
        mkdirSync(volume, { recursive: true });
      }
      this.waiting.delete(key);
      await createIfAbsent(this.client, '/api/v1/persistentvolumes', {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: pvName, annotations: { 'pv.kubernetes.io/provisioned-by': this.driver } },
        spec: {
          accessModes: claim.spec.accessModes,
          capacity: { storage: claim.spec.resources.requests.storage },
          persistentVolumeReclaimPolicy: storageClass.reclaimPolicy ?? 'Delete',
          storageClassName: storageClass.metadata.name,
          volumeMode: claim.spec.volumeMode ?? 'Filesystem',
          claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: ref.namespace, name: ref.name, uid: ref.uid, resourceVersion: claim.metadata.resourceVersion },
          csi: { driver: this.driver, volumeHandle: ref.uid },
        },
      });
    }
  }

  /** The snapshot's handle when a volume can be restored from it; otherwise why not. */
  private async restorableSnapshot(namespace: string, name: string, claim: any): Promise<{ handle: string } | string> {
    const snapshot = await getOrUndefined(this.client, `${SNAPSHOT_API}/namespaces/${namespace}/volumesnapshots/${name}`);
    if (!snapshot) return `VolumeSnapshot ${namespace}/${name} not found`;
    if (snapshot.metadata.deletionTimestamp) return `VolumeSnapshot ${namespace}/${name} is being deleted`;
    if (snapshot.status?.readyToUse !== true || !snapshot.status.boundVolumeSnapshotContentName) return `VolumeSnapshot ${namespace}/${name} is not ready to use`;
    const content = await getOrUndefined(this.client, `${SNAPSHOT_API}/volumesnapshotcontents/${snapshot.status.boundVolumeSnapshotContentName}`);
    if (!content) return `VolumeSnapshotContent ${snapshot.status.boundVolumeSnapshotContentName} not found`;
    if (content.spec.volumeSnapshotRef?.uid !== snapshot.metadata.uid) return `VolumeSnapshotContent ${content.metadata.name} is bound to another snapshot`;
    if (content.spec.driver !== this.driver) return `VolumeSnapshotContent ${content.metadata.name} is of driver ${content.spec.driver}`;
    const handle = content.status?.snapshotHandle;
    if (!handle || !existsSync(this.snapshotPath(handle))) return `snapshot ${handle ?? '(no handle)'} of ${content.metadata.name} not found on the storage`;
    const requested = quantityValue(claim.spec.resources?.requests?.storage ?? '0') ?? 0;
    if ((content.status.restoreSize ?? 0) > requested) return `requested ${claim.spec.resources?.requests?.storage} is less than the snapshot's restore size ${content.status.restoreSize}`;
    return { handle };
  }

  private async deleteReleased(pvs: any[]): Promise<void> {
    for (const pv of pvs) {
      if (pv.status?.phase !== 'Released' || pv.spec.persistentVolumeReclaimPolicy !== 'Delete' || pv.metadata.deletionTimestamp) continue;
      await this.client.request('DELETE', `/api/v1/persistentvolumes/${pv.metadata.name}`).catch((e) => {
        if (!(e instanceof KubeApiError && e.status === 404)) throw e;
      });
    }
  }

  // ------------------------------------------------------------ csi-snapshotter sidecar

  private async snapshots(pvs: any[]): Promise<void> {
    const contents = ((await this.client.request('GET', `${SNAPSHOT_API}/volumesnapshotcontents`)).items as any[]).filter((c) => c.spec.driver === this.driver);
    for (const content of contents) {
      const annotations = content.metadata.annotations ?? {};
      if (content.metadata.deletionTimestamp) {
        if (this.shouldDelete(content)) await this.deleteSnapshot(content);
        continue;
      }
      if (annotations[ANN_GROUP_SNAPSHOT_HANDLE]) continue;
      if (content.spec.source?.volumeHandle && !content.status?.snapshotHandle) {
        await this.createSnapshot(content, pvs);
      } else if (content.status?.snapshotHandle && content.status.readyToUse !== true) {
        if ((this.readyAt.get(content.metadata.uid) ?? 0) <= Date.now()) await this.patchStatus(content.metadata.name, { readyToUse: true });
      } else if (annotations[ANN_BEING_CREATED]) {
        await this.annotate(content.metadata.name, ANN_BEING_CREATED, null);
      }
    }
  }

  /** As the sidecar's shouldDelete: being deleted, and either an unbound pre-provisioned content or annotated being-deleted and not being created. */
  private shouldDelete(content: any): boolean {
    const annotations = content.metadata.annotations ?? {};
    if (content.spec.source?.snapshotHandle && !content.spec.volumeSnapshotRef?.uid) return true;
    if (annotations[ANN_BEING_CREATED]) return false;
    return ANN_BEING_DELETED in annotations;
  }

  private async createSnapshot(content: any, pvs: any[]): Promise<void> {
    const name: string = content.metadata.name;
    const pv = pvs.find((p) => p.spec.csi.volumeHandle === content.spec.source.volumeHandle);
    const claimRef = pv?.spec.claimRef;
    if (!claimRef?.uid) throw new Error(`VolumeSnapshotContent ${name}: no PV of driver ${this.driver} with volume handle ${content.spec.source.volumeHandle} bound to a claim`);
    await this.annotate(name, ANN_BEING_CREATED, 'yes');
    const handle = `snap-${content.metadata.uid}`;
    const target = this.snapshotPath(handle);
    const volume = this.options.volumePath({ namespace: claimRef.namespace, name: claimRef.name, uid: claimRef.uid });
    rmSync(target, { recursive: true, force: true });
    if (existsSync(volume)) cpSync(volume, target, { recursive: true });
    else mkdirSync(target, { recursive: true }); // a volume nothing has written to yet
    const creationTime = BigInt(Date.now()) * 1_000_000n;
    this.readyAt.set(content.metadata.uid, Date.now() + this.readyDelayMs);
    const restoreSize = quantityValue(pv.spec.capacity?.storage ?? '0') ?? 0;
    await this.patchStatus(name, { snapshotHandle: handle, readyToUse: false, ...(restoreSize > 0 ? { restoreSize } : {}) }, creationTime);
    await this.annotate(name, ANN_BEING_CREATED, null);
  }

  private async deleteSnapshot(content: any): Promise<void> {
    const name: string = content.metadata.name;
    const status = content.status ?? {};
    let current = content;
    if (content.spec.deletionPolicy === 'Delete' && status.snapshotHandle && !status.volumeGroupSnapshotHandle) {
      rmSync(this.snapshotPath(status.snapshotHandle), { recursive: true, force: true });
      current = await this.patchStatus(name, { snapshotHandle: null, readyToUse: null, creationTime: null, restoreSize: null });
      this.readyAt.delete(content.metadata.uid);
    }
    const finalizers: string[] = current.metadata.finalizers ?? [];
    if (finalizers.includes(CONTENT_FINALIZER)) {
      // Conditional on the version read: a finalizer another controller added meanwhile is not dropped (a conflict is retried next poll).
      await this.client.request('PATCH', `${SNAPSHOT_API}/volumesnapshotcontents/${name}`, {
        body: { metadata: { resourceVersion: current.metadata.resourceVersion, finalizers: finalizers.filter((f) => f !== CONTENT_FINALIZER) } },
        contentType: 'application/merge-patch+json',
      });
    }
  }

  /** A merge patch of the content's /status; creationTime (unix ns, beyond a double's precision) is written as an exact integer. */
  private async patchStatus(name: string, status: Record<string, unknown>, creationTime?: bigint): Promise<any> {
    let body = JSON.stringify({ status: creationTime === undefined ? status : { ...status, creationTime: '__CREATION_TIME__' } });
    if (creationTime !== undefined) body = body.replace('"__CREATION_TIME__"', creationTime.toString());
    return this.client.request('PATCH', `${SNAPSHOT_API}/volumesnapshotcontents/${name}/status`, { body, contentType: 'application/merge-patch+json' });
  }

  private async annotate(name: string, key: string, value: string | null): Promise<void> {
    await this.client.request('PATCH', `${SNAPSHOT_API}/volumesnapshotcontents/${name}`, { body: { metadata: { annotations: { [key]: value } } }, contentType: 'application/merge-patch+json' });
  }
}
