// Slow: real members' volumes are snapshotted through the CSI snapshot controller beside a backup (about 1 minute).
/**
 * CSI VolumeSnapshots in backups and restores, on real components: the API
 * server, kube-controller-manager (StatefulSets, PV binding, garbage
 * collection), kube-scheduler and kwok's nodes; the real snapshot controller
 * from kubernetes-csi/external-snapshotter with its CRDs; real etcd members;
 * a real S3-compatible server; `dkv backup` and `dkv restore` compiled.
 *
 * No CSI driver can run without a kubelet, and none runs here: a test-side
 * loop (TestCsiDriver, test/support/csi-snapshots.ts) plays the driver, the
 * csi-snapshotter sidecar and the external-provisioner, with plain
 * directories as volumes and snapshots; it reports a snapshot cut
 * (creationTime) 1.5 s before it is ready to use, as storage that copies in
 * the background does. Another loop plays the kubelet for the members
 * (etcd-kubelet.ts), on the same directories.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { loadDefaultConfig, type GeneratorConfig } from '../../api/config.js';
import { customResourceDefinition } from '../../api/crd.js';
import type { BackupManifest } from '../../backup/manifest.js';
import { KubeClient } from '../../kube/client.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { describeWithCluster, eventually, installCrd } from '../cluster/kube.js';
import { createCsiStorageClasses, csiSnapshotterTools, SNAPSHOT_API, snapshotCrds, startSnapshotController, TestCsiDriver, type SnapshotController } from '../support/csi-snapshots.js';
import { dkv } from '../support/dkv-cli.js';
import { countOrders, etcdPost, writeOrders } from '../support/etcd-members.js';
import { configWithS3, EtcdNamespaces, IMAGE, NAME, type RunningController } from '../support/etcd-namespaces.js';
import { S3_ACCESS_KEY, S3_SECRET_KEY, startS3Server, type S3Server } from '../support/s3-server.js';
import { clusterPath, createCluster } from './controller-harness.js';
import { LATER_BINARIES_BUILD_MS } from '../cluster/binaries.js';
import { reportTiming } from '../support/timing-figures.js';

const DRIVER = 'csi.dkv.test';
const KEYS = 1_000;
const READY_DELAY_MS = 1500;

describeWithCluster('CSI VolumeSnapshots with every backup, and a cluster restored from one', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let s3: S3Server;
  let s3Client: S3Client;
  let config: GeneratorConfig;
  let dir: string;
  let controller: RunningController | undefined;
  let snapshotController: SnapshotController | undefined;
  let driver: TestCsiDriver | undefined;
  let namespaces: EtcdNamespaces;
  let storageClass: string;
  let snapshotClass: string;

  const snapshots = async (namespace: string): Promise<any[]> => (await client.request('GET', `${SNAPSHOT_API}/namespaces/${namespace}/volumesnapshots`)).items;
  const manifests = async (prefix: string): Promise<BackupManifest[]> => {
    const listed = await s3Client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix }));
    const keys = (listed.Contents ?? []).map((o) => o.Key!).filter((k) => k.endsWith('manifest.json')).sort();
    return Promise.all(keys.map(async (Key) => JSON.parse(await (await s3Client.send(new GetObjectCommand({ Bucket: s3.bucket, Key }))).Body!.transformToString())));
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dkv-volume-snapshots-'));
    const tools = csiSnapshotterTools();
    s3 = await startS3Server();
    s3Client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY } });
    const defaults = loadDefaultConfig(); // the etcd engine
    plane = await startControlPlane(undefined, { withNodes: { crds: [customResourceDefinition(defaults) as Record<string, any>, ...snapshotCrds(tools)] } });
    client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
    await installCrd(client);
    snapshotController = await startSnapshotController(tools, plane);
    ({ storageClass, snapshotClass } = await createCsiStorageClasses(client, DRIVER));
    config = configWithS3(s3, { volumeSnapshots: { ...defaults.backup.volumeSnapshots, className: snapshotClass } });
    namespaces = new EtcdNamespaces(client, config, dir);
    driver = new TestCsiDriver(client, {
      driver: DRIVER, snapshotsDir: join(dir, 'snapshots'), readyDelayMs: READY_DELAY_MS,
      // The members' volumes, as the kubelet loop mounts them: `<pod>-<claim uid>` (claims are `data-<pod>`).
      volumePath: (claim) => join(namespaces.volumes(claim.namespace), `${claim.name.slice('data-'.length)}-${claim.uid}`),
    });
    driver.start();
    controller = await namespaces.startController(plane.kubeconfigPath, config);
  }, 600_000 + LATER_BINARIES_BUILD_MS);

  afterAll(async () => {
    await controller?.stop();
    await namespaces?.stop();
    await driver?.stop();
    await snapshotController?.stop();
    s3Client?.destroy();
    client?.close();
    await plane?.stop();
    await s3?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('cuts a labelled VolumeSnapshot of the backed-up member with each backup, released at the cut and recorded once ready; a runner killed part-way holds nothing and the next success sweeps its snapshot; the retention deletes a snapshot with its backup; a new cluster restored from it serves every key', async () => {
    const namespace = await namespaces.add('volumes');
    await createCluster(client, namespace, NAME, { size: 3, image: IMAGE, storage: { storageClassName: storageClass },
      backup: { s3Path: `s3://${s3.bucket}/volumes`, schedule: '0 3 * * *' } }, { [config.backup.final.skipAnnotation]: 'true' });
    await namespaces.healthy(namespace, 3, clusterPath(namespace, NAME));
    await writeOrders(namespaces.clientUrl(namespace, 'kv-0'), KEYS);
    // As the CronJob's container runs it, with the generated environment; the API through a kubeconfig instead of the pod's ServiceAccount.
    const tlsDir = await namespaces.clientTlsDir(namespace); // the client Secret, where the CronJob mounts it
    const backup = (retain: number, started?: (child: ChildProcess) => void) => dkv(['backup', '--cluster', NAME, '--namespace', namespace, '--s3-path', `s3://${s3.bucket}/volumes`, ...namespaces.memberArgs(namespace)], {
      ...s3.env, KUBECONFIG: plane.kubeconfigPath, DKV_S3_ENDPOINT: s3.endpoint, DKV_S3_FORCE_PATH_STYLE: 'true',
      DKV_VOLUME_SNAPSHOT_CLASS: snapshotClass, DKV_VOLUME_SNAPSHOT_READY_TIMEOUT_SECONDS: '60', DKV_BACKUP_RETAIN: String(retain), DKV_TLS_DIR: tlsDir,
    }, started);
    const first = await backup(5);
    expect(first.stderr).not.toMatch(/failed/);
    expect(first.stdout).toMatch(/; volume snapshot kv-\d-\d{8}t\d{9}z cut in [\d.]+ s/);
    const [manifest] = await manifests('volumes/');
    const volume = manifest.volumeSnapshot!;
    expect(volume).toMatchObject({ namespace, name: expect.stringMatching(new RegExp(`^${manifest.member.name}-`)), claim: `data-${manifest.member.name}`, creationTime: expect.any(String) });
    const [snapshot] = await snapshots(namespace);
    // Released at the cut, not at readiness: dkv said it was cut (and went on to stream the snapshot) before the
    // driver could have made it ready, READY_DELAY_MS after the cut the content records in nanoseconds.
    const content = await client.request<any>('GET', `/apis/snapshot.storage.k8s.io/v1/volumesnapshotcontents/${snapshot.status.boundVolumeSnapshotContentName}`);
    const cutLine = first.stderr.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line)).find((l) => l.msg === 'volume snapshot cut');
    expect(Date.parse(cutLine.time)).toBeLessThan(content.status.creationTime / 1e6 + READY_DELAY_MS);
    reportTiming({ what: 'volume snapshot: the member released at the cut, after the request', ms: Math.round(volume.cutSeconds * 1000), boundMs: READY_DELAY_MS, bound: 'the test driver\'s delay from cut to ready' });
    expect(snapshot.metadata.name).toBe(volume.name);
    expect(snapshot.status.readyToUse).toBe(true);
    expect(snapshot.spec).toEqual({ volumeSnapshotClassName: snapshotClass, source: { persistentVolumeClaimName: volume.claim } });
    expect(snapshot.metadata.labels).toMatchObject({ 'app.kubernetes.io/instance': NAME, 'dkv.example.com/member': manifest.member.name, 'dkv.example.com/backup': expect.stringMatching(/^\d{8}T\d{6}\.\d{3}Z$/) });
    const sts = (await client.request('GET', `/apis/apps/v1/namespaces/${namespace}/statefulsets/${NAME}`)).metadata.annotations[config.hashAnnotation];
    expect(snapshot.metadata.annotations).toMatchObject({ 'dkv.example.com/engine': 'etcd', 'dkv.example.com/server-version': '3.6.8', 'dkv.example.com/taken-at': manifest.startedAt,
      'dkv.example.com/spec-hash': sts });
    expect(sts).toMatch(/^[0-9a-f]{8,}/);

    // A runner killed once its snapshot was asked for: nothing is held (etcd is never quiesced), and it leaves a snapshot without a backup.
    let runner: ChildProcess | undefined;
    const killed = backup(5, (child) => (runner = child));
    const orphan = await eventually('the killed run\'s VolumeSnapshot', async () => (await snapshots(namespace)).find((s) => s.metadata.name !== volume.name), 30_000, 20);
    runner!.kill('SIGKILL');
    expect((await killed).status).toBeNull();
    expect((await manifests('volumes/')).length).toBe(1);

    // The next run succeeds. Keeping one backup: the first one's folder and its VolumeSnapshot go, and so does the killed run's.
    const second = await backup(1);
    expect(second.status).toBe(0);
    const [kept] = await manifests('volumes/');
    expect(kept.startedAt > manifest.startedAt).toBe(true);
    expect(orphan.metadata.name).not.toBe(kept.volumeSnapshot!.name);
    await eventually('the first backup\'s and the killed run\'s VolumeSnapshots to be deleted', async () => {
      const names = (await snapshots(namespace)).map((s) => s.metadata.name);
      return names.length === 1 && names[0] === kept.volumeSnapshot!.name ? true : undefined;
    }, 30_000, 200);

    // The cluster is deleted with its volumes; a new one is created from the kept VolumeSnapshot.
    await client.request('DELETE', clusterPath(namespace, NAME));
    // The kubelet loop stops each member as its pod goes; then the claims are no longer in use.
    await eventually('the pods to be gone', async () => ((await client.request('GET', `/api/v1/namespaces/${namespace}/pods`)).items.length === 0 ? true : undefined), 60_000, 200);
    await namespaces.stop(namespace);
    for (let i = 0; i < 3; i++) await client.request('DELETE', `/api/v1/namespaces/${namespace}/persistentvolumeclaims/data-kv-${i}`);
    await eventually('the claims to be gone', async () => ((await client.request('GET', `/api/v1/namespaces/${namespace}/persistentvolumeclaims`)).items.length === 0 ? true : undefined), 60_000, 200);
    await namespaces.run(namespace);
    await createCluster(client, namespace, NAME, { size: 3, image: IMAGE, storage: { storageClassName: storageClass }, restore: { from: kept.volumeSnapshot!.name } });
    await namespaces.healthy(namespace, 3, clusterPath(namespace, NAME));
    const restoredSts = await client.request('GET', `/apis/apps/v1/namespaces/${namespace}/statefulsets/${NAME}`);
    expect(restoredSts.spec.volumeClaimTemplates[0].spec.dataSource).toEqual({ apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: kept.volumeSnapshot!.name });
    expect(await countOrders(namespaces.clientUrl(namespace, 'kv-2'))).toBe(KEYS);
    // Each member made the copy its own: three members, not three copies of the one the snapshot was cut from.
    const list = await etcdPost(namespaces.clientUrl(namespace, 'kv-0'), '/v3/cluster/member/list', {});
    expect(list.members.map((m: any) => m.name).sort()).toEqual(['kv-0', 'kv-1', 'kv-2']);
    const restores = namespaces.kubelet(namespace).initRuns.filter((r) => r.container === 'restore' && r.code === 0);
    expect(restores.map((r) => r.pod).sort()).toEqual(['kv-0', 'kv-1', 'kv-2']);

    // A snapshot that is not there is refused before anything is created.
    await createCluster(client, namespace, 'ghost', { size: 3, image: IMAGE, storage: { storageClassName: storageClass }, restore: { from: 'no-such-snapshot' } });
    const refused = await eventually('ghost to be Degraded', async () => (await client.request('GET', clusterPath(namespace, 'ghost'))).status?.conditions?.find((c: any) => c.type === 'Degraded' && c.status === 'True'), 30_000, 100);
    expect(refused).toMatchObject({ reason: 'RestoreSourceInvalid', message: `spec.restore.from: no VolumeSnapshot no-such-snapshot in namespace ${namespace} (or this cluster serves no VolumeSnapshots); nothing was created` });
    expect(driver!.errors).toEqual([]);
  }, 300_000);
});
