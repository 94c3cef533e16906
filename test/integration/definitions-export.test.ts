/**
 * The scheduled export of the clusters' definitions, on real components: the
 * controller against the test kube-apiserver, exporting into a real
 * S3-compatible server (versitygw) every 2 s (a six-field cron with
 * seconds), keeping the newest two exports. What it writes is what
 * `dkv export` writes: files `dkv import` and `dkv synth` take as they are.
 */
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { parse } from 'yaml';
import { validateDistributedKV } from '../../api/validate.js';
import type { KubeClient } from '../../kube/client.js';
import { createLogger } from '../../kube/log.js';
import { Controller } from '../../reconciler/core/controller.js';
import { createNamespace, describeWithCluster, eventually, installCrd, testClient } from '../cluster/kube.js';
import { S3_ACCESS_KEY, S3_SECRET_KEY, startS3Server, type S3Server } from '../support/s3-server.js';
import { config as harnessConfig, createCluster } from './controller-harness.js';

describeWithCluster('the controller exports every cluster\'s definition into S3 on a schedule', () => {
  let client: KubeClient;
  let s3: S3Server;
  let s3Client: S3Client;
  let controller: Controller | undefined;
  let namespace: string;

  const listed = async (prefix: string): Promise<string[]> =>
    ((await s3Client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix }))).Contents ?? []).map((o) => o.Key!).sort();
  const text = async (key: string): Promise<string> => (await s3Client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))).Body!.transformToString();
  const folders = async (): Promise<string[]> => [...new Set((await listed('definitions/')).map((k) => k.split('/')[1]))].sort();

  beforeAll(async () => {
    client = testClient();
    await installCrd(client);
    namespace = await createNamespace(client, 'definitions');
    s3 = await startS3Server();
    s3Client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY } });
    const config = {
      ...harnessConfig,
      backup: { ...harnessConfig.backup, s3: { ...harnessConfig.backup.s3, endpoint: s3.endpoint, forcePathStyle: true }, definitions: { s3Path: `s3://${s3.bucket}/definitions`, schedule: '*/2 * * * * *', retain: 2 } },
    };
    await createCluster(client, namespace, 'orders', { size: 3, image: 'kv:1', backup: { s3Path: 's3://acme/backups', schedule: '@daily', backupImage: 'kv-backup:1' } });
    await createCluster(client, namespace, 'sessions', { size: 1, image: 'kv:1' });
    controller = new Controller({
      client, config, log: createLogger(process.env.DKV_TEST_LOG_LEVEL ?? 'silent'), namespace, workers: 2, backoff: { baseMs: 200, maxMs: 2000 },
      s3Credentials: { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY },
    });
    await controller.startCaches();
    await controller.startWorkers();
  }, 120_000);

  afterAll(async () => {
    await controller?.stop();
    s3Client?.destroy();
    await s3?.stop();
    client?.close();
  });

  it('writes one folder per export with every cluster\'s definition and its manifest last, keeps the newest two', async () => {
    // Three exports at least (2 s apart): the retention has deleted the first by then.
    const seen = new Set<string>();
    await eventually('three exports', async () => {
      for (const folder of await folders()) seen.add(folder);
      return seen.size >= 3 ? true : undefined;
    }, 30_000, 200);
    const kept = await eventually('the retention to keep two complete exports', async () => {
      const now = await folders();
      const complete = [];
      for (const f of now) if ((await listed(`definitions/${f}/`)).includes(`definitions/${f}/manifest.json`)) complete.push(f);
      return complete.length === 2 && now.length === 2 ? now : undefined;
    }, 30_000, 200);
    expect(kept.every((f) => /^\d{8}T\d{6}\.\d{3}Z$/.test(f))).toBe(true);

    const newest = kept[kept.length - 1];
    expect(await listed(`definitions/${newest}/`)).toEqual([
      `definitions/${newest}/manifest.json`, `definitions/${newest}/${namespace}.orders.yaml`, `definitions/${newest}/${namespace}.sessions.yaml`,
    ].sort());
    expect(JSON.parse(await text(`definitions/${newest}/manifest.json`))).toMatchObject({ kind: 'DefinitionsExport', files: [`${namespace}.orders.yaml`, `${namespace}.sessions.yaml`] });
    const orders = await text(`definitions/${newest}/${namespace}.orders.yaml`);
    expect(orders).toMatch(/^# Exported by dkv export from https:\/\/127\.0\.0\.1:\d+ at /);
    const document = parse(orders);
    expect(document).toEqual({ apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'orders', namespace }, spec: expect.objectContaining({ size: 3, image: 'kv:1' }) });
    expect(validateDistributedKV(document, harnessConfig).valid).toBe(true);
  }, 90_000);
});
