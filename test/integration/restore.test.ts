// Slow: real members are backed up to S3 (versitygw) and restored into new clusters (about 1.5 minutes).
/**
 * Restore, on real components: the API server, kube-controller-manager,
 * kube-scheduler and kwok's nodes run the pods; real etcd processes are the
 * members; a real S3-compatible server (versitygw) holds the backup; the
 * restore init container is the compiled `dkv restore` with etcd's own
 * `etcdutl`. No component can run a pod's containers here, so a test-side
 * loop plays the kubelet's part (test/support/etcd-kubelet.ts): it runs each
 * pod's init containers to completion, then the member.
 *
 * 10,000 keys are written to a cluster, backed up with `dkv backup`, the
 * cluster is deleted, and a new cluster created with `spec.restore.from`
 * serves every key. Bad sources are refused before anything is created.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CopyObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { GeneratorConfig } from '../../api/config.js';
import { customResourceDefinition } from '../../api/crd.js';
import { KubeClient } from '../../kube/client.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { describeWithCluster, eventually, installCrd } from '../cluster/kube.js';
import { dkv } from '../support/dkv-cli.js';
import { b64, countOrders, etcdPost, writeOrders } from '../support/etcd-members.js';
import { configWithS3, EtcdNamespaces, IMAGE, NAME, type RunningController } from '../support/etcd-namespaces.js';
import { S3_ACCESS_KEY, S3_SECRET_KEY, startS3Server, type S3Server } from '../support/s3-server.js';
import { clusterPath, createCluster } from './controller-harness.js';
import { LATER_BINARIES_BUILD_MS } from '../cluster/binaries.js';

const KEYS = 10_000;

describeWithCluster('a new cluster restored from a backup in S3', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let s3: S3Server;
  let s3Client: S3Client;
  let config: GeneratorConfig;
  let dir: string;
  let controller: RunningController | undefined;
  let namespaces: EtcdNamespaces;
  /** The backup the first test took: its folder's key. */
  let backupFolder: string | undefined;

  const clientUrl = (namespace: string, pod: string) => namespaces.clientUrl(namespace, pod);
  const status = (namespace: string, name = NAME) => client.request('GET', clusterPath(namespace, name));
  const healthy = (namespace: string, size: number) => namespaces.healthy(namespace, size, clusterPath(namespace, NAME));
  const degraded = (namespace: string, name: string) => eventually(`${namespace}/${name} to be Degraded`, async () => {
    const cr = await status(namespace, name);
    return cr.status?.conditions?.find((c: any) => c.type === 'Degraded' && c.status === 'True');
  }, 30_000, 100);
  /** Every object the controller generated for a cluster, by the instance label. */
  const generated = async (namespace: string, name: string): Promise<string[]> => {
    const selector = `app.kubernetes.io/instance=${name}`;
    const paths = ['/api/v1/namespaces/%s/services', '/api/v1/namespaces/%s/configmaps', '/apis/apps/v1/namespaces/%s/statefulsets',
      '/apis/policy/v1/namespaces/%s/poddisruptionbudgets', '/apis/batch/v1/namespaces/%s/cronjobs', '/api/v1/namespaces/%s/persistentvolumeclaims'];
    const lists = await Promise.all(paths.map((p) => client.request('GET', p.replace('%s', namespace), { query: { labelSelector: selector } })));
    return lists.flatMap((l) => l.items.map((o: any) => o.metadata.name));
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dkv-restore-'));
    s3 = await startS3Server();
    s3Client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY } });
    config = configWithS3(s3); // the etcd engine
    plane = await startControlPlane(undefined, { withNodes: { crds: [customResourceDefinition(config) as Record<string, any>] } });
    client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
    await installCrd(client);
    namespaces = new EtcdNamespaces(client, config, dir);
    // The restore check is the production one, with the controller's credentials.
    controller = await namespaces.startController(plane.kubeconfigPath, config);
  }, 240_000 + LATER_BINARIES_BUILD_MS);

  afterAll(async () => {
    await controller?.stop();
    await namespaces?.stop();
    s3Client?.destroy();
    client?.close();
    await plane?.stop();
    await s3?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('backs up 10,000 keys, deletes the cluster, and a new cluster restored from the backup serves every key; members added later join empty', async () => {
    const source = await namespaces.add('source');
    await createCluster(client, source, NAME, { size: 3, image: IMAGE, backup: { s3Path: `s3://${s3.bucket}/nightly`, schedule: '0 3 * * *' } },
      { [config.backup.final.skipAnnotation]: 'true' });
    await healthy(source, 3);
    await writeOrders(clientUrl(source, 'kv-0'), KEYS);
    // One backup, as the CronJob's container takes it (its members reached on loopback).
    const backup = await dkv(['backup', '--cluster', NAME, '--namespace', source, '--s3-path', `s3://${s3.bucket}/nightly`,
      ...namespaces.memberArgs(source)], { ...s3.env, DKV_S3_ENDPOINT: s3.endpoint, DKV_S3_FORCE_PATH_STYLE: 'true', DKV_TLS_DIR: await namespaces.clientTlsDir(source) });
    expect(backup.stderr).not.toMatch(/failed/);
    const from = /^(s3:\/\/\S+\/)/.exec(backup.stdout)![1];
    backupFolder = from.slice(`s3://${s3.bucket}/`.length);

    // The cluster is gone, members and all.
    await client.request('DELETE', clusterPath(source, NAME));
    await namespaces.stop(source);

    const target = await namespaces.add('restored');
    const created = await createCluster(client, target, NAME, { size: 3, image: IMAGE, restore: { from } });
    const restored = await healthy(target, 3);
    expect(restored.status.conditions.find((c: any) => c.type === 'Available')).toMatchObject({ status: 'True' });
    expect(await countOrders(clientUrl(target, 'kv-1'))).toBe(KEYS);
    const all = await etcdPost(clientUrl(target, 'kv-2'), '/v3/kv/range', { key: b64('orders/'), range_end: b64('orders0') }, 30_000);
    const values = new Map(all.kvs.map((kv: any) => [Buffer.from(kv.key, 'base64').toString(), Buffer.from(kv.value, 'base64').toString()]));
    for (let i = 0; i < KEYS; i++) expect(values.get(`orders/${String(i).padStart(5, '0')}`)).toBe(`order ${i}`);

    // Each member restored the backup itself, checked against the manifest's sha256, before etcd started.
    const kubelet = namespaces.kubelet(target);
    const firstRuns = kubelet.initRuns.filter((r) => r.container === 'restore');
    expect(firstRuns.map((r) => [r.pod, r.code]).sort()).toEqual([['kv-0', 0], ['kv-1', 0], ['kv-2', 0]]);
    for (const run of firstRuns) expect(readFileSync(run.log, 'utf8')).toMatch(new RegExp(`restored ${run.pod} from ${from.replace(/[.]/g, '\\.')} .*sha256 [0-9a-f]{64}, as its manifest says`));

    // A member added later joins the running cluster empty and copies from the others: nothing is restored into it.
    await client.request('PATCH', clusterPath(target, NAME), { body: { spec: { size: 5 } }, contentType: 'application/merge-patch+json' });
    await healthy(target, 5);
    const joined = kubelet.initRuns.filter((r) => r.container === 'restore' && (r.pod === 'kv-3' || r.pod === 'kv-4'));
    expect(joined.map((r) => r.code)).toEqual([0, 0]);
    for (const run of joined) expect(readFileSync(run.log, 'utf8')).toMatch(/nothing restored: kv-\d joins the running cluster/);
    const onNew = await etcdPost(clientUrl(target, 'kv-4'), '/v3/kv/range', { key: b64('orders/04242'), serializable: true });
    expect(Buffer.from(onNew.kvs[0].value, 'base64').toString()).toBe('order 4242');

    // The restore is fixed at creation: the API server refuses a change, and never in place.
    await expect(client.request('PATCH', clusterPath(target, NAME), { body: { spec: { restore: { from: from.replace(/\/$/, '') } } }, contentType: 'application/merge-patch+json' }))
      .rejects.toThrow(/restore is set only when a cluster is created/);
    await expect(client.request('PATCH', clusterPath(target, NAME), { body: { spec: { restore: null } }, contentType: 'application/merge-patch+json' }))
      .rejects.toThrow(/restore is set only when a cluster is created/);
    expect((await status(target)).metadata.generation).toBe(created.metadata.generation + 1);
  }, 300_000);

  it('refuses a source that holds no backup, or one another engine took, naming it, and creates nothing; once the backup is there, the cluster is created from it', async () => {
    const namespace = await namespaces.add('badsource');
    const missingFolder = 'nightly/elsewhere/kv/20200101T000000.000Z/';
    const missing = `s3://${s3.bucket}/${missingFolder}`;
    await createCluster(client, namespace, NAME, { size: 3, image: IMAGE, restore: { from: missing } });
    // A whole backup, by another engine.
    const folder = 'other/shop/kv/20260101T000000.000Z/';
    await s3Client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: `${folder}manifest.json`, Body: JSON.stringify({
      apiVersion: 'dkv.example.com/v1', kind: 'BackupManifest', cluster: { namespace: 'shop', name: 'kv' }, engine: 'generic', member: { name: 'kv-0' },
      startedAt: '2026-01-01T00:00:00.000Z', finishedAt: '2026-01-01T00:00:01.000Z', files: [{ name: 'snapshot.db', bytes: 1, sha256: '0'.repeat(64) }],
    }) }));
    await createCluster(client, namespace, 'foreign', { size: 3, image: IMAGE, restore: { from: `s3://${s3.bucket}/${folder}` } });

    const noBackup = await degraded(namespace, NAME);
    expect(noBackup).toMatchObject({ reason: 'RestoreSourceInvalid' });
    expect(noBackup.message).toBe(`spec.restore.from: no backup at ${missing}: it has no manifest.json (a backup is whole only once its manifest is written); nothing was created`);
    const foreign = await degraded(namespace, 'foreign');
    expect(foreign.message).toMatch(/^spec\.restore\.from: the backup at s3:\/\/.*other\/shop\/kv\/20260101T000000\.000Z\/ was taken by the "generic" engine; this cluster runs "etcd", which cannot restore it/);
    // The Warning Event follows the status write (reconciler/core/report.ts), so it may land a moment after the condition.
    const warned = await eventually('a RestoreSourceInvalid Event for both clusters', async () => {
      const events = (await client.request('GET', `/api/v1/namespaces/${namespace}/events`)).items.filter((e: any) => e.reason === 'RestoreSourceInvalid');
      const names = events.map((e: any) => e.involvedObject.name).sort();
      return names.length >= 2 ? names : undefined;
    }, 10_000, 100);
    expect(warned).toEqual(['foreign', NAME]);
    expect(await generated(namespace, NAME)).toEqual([]);
    expect(await generated(namespace, 'foreign')).toEqual([]);

    // The backup arrives (data first, manifest last, as dkv backup writes it): the refusal was retried with backoff, and the cluster is created from it.
    expect(backupFolder).toBeDefined();
    for (const file of ['snapshot.db', 'manifest.json']) {
      await s3Client.send(new CopyObjectCommand({ Bucket: s3.bucket, CopySource: `${s3.bucket}/${backupFolder}${file}`, Key: `${missingFolder}${file}` }));
    }
    await healthy(namespace, 3);
    expect(await countOrders(clientUrl(namespace, 'kv-0'))).toBe(KEYS);
    expect((await status(namespace)).status.conditions.find((c: any) => c.type === 'Degraded')).toMatchObject({ status: 'False' });
    // The other stays refused, with nothing created.
    expect(await generated(namespace, 'foreign')).toEqual([]);
  }, 180_000);
});
