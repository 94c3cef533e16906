// Slow: scheduled backups of real members run to S3, with retention, through the generated CronJob (about 1.5 minutes).
/**
 * Scheduled backups that really run, on real components: kube-controller-
 * manager's CronJob and Job controllers start the runs on the schedule
 * (every minute) and retry failed pods up to the Job's backoff limit; real
 * etcd members are backed up by the compiled `dkv backup` into a real
 * S3-compatible server (versitygw). No component can run a pod's container
 * here: kwok schedules the pods and marks them Running, and two test-side
 * loops play the kubelet's part, one for the members (etcd-kubelet.ts),
 * one for the Jobs' pods (job-kubelet.ts: runs the container, reports its
 * exit code on the pod). kwok's own `pod-complete` Stage, which would
 * report every Job pod Succeeded, is left out.
 *
 * The scenario: S3 is down when the cluster is created, so the first run
 * fails (BackupFailing), and after two scheduled runs without a success the
 * backups are stale (BackupStale); S3 comes back, the next run writes a
 * backup into S3 and both conditions clear, with lastBackupTime set from
 * the Job that succeeded.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { GeneratorConfig } from '../../api/config.js';
import { customResourceDefinition } from '../../api/crd.js';
import { KubeClient } from '../../kube/client.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { describeWithCluster, eventually, installCrd } from '../cluster/kube.js';
import { configWithS3, EtcdNamespaces, IMAGE, NAME, type RunningController } from '../support/etcd-namespaces.js';
import { JobKubelet } from '../support/job-kubelet.js';
import { S3_ACCESS_KEY, S3_SECRET_KEY, startS3Server, type S3Server } from '../support/s3-server.js';
import { clusterPath, createCluster } from './controller-harness.js';
import { LATER_BINARIES_BUILD_MS } from '../cluster/binaries.js';

describeWithCluster('scheduled backups of a real etcd cluster, run by real CronJobs and Jobs', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let s3: S3Server;
  let config: GeneratorConfig;
  let dir: string;
  let controller: RunningController | undefined;
  let namespaces: EtcdNamespaces;
  let jobs: JobKubelet | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dkv-scheduled-'));
    s3 = await startS3Server();
    config = configWithS3(s3); // the etcd engine
    plane = await startControlPlane(undefined, { withNodes: { crds: [customResourceDefinition(config) as Record<string, any>], withoutStages: ['pod-complete'] } });
    client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
    await installCrd(client);
    namespaces = new EtcdNamespaces(client, config, dir);
    controller = await namespaces.startController(plane.kubeconfigPath, config);
  }, 240_000 + LATER_BINARIES_BUILD_MS);

  afterAll(async () => {
    await jobs?.stop();
    await controller?.stop();
    await namespaces?.stop();
    client?.close();
    await plane?.stop();
    await s3?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('reports a failing run and stale backups while S3 is down, then a backup in S3 and lastBackupTime once it is back', async () => {
    const namespace = await namespaces.add('scheduled');
    jobs = new JobKubelet(client, namespace, () => namespaces.memberArgs(namespace));
    jobs.start();
    await s3.pause();
    const created = await createCluster(client, namespace, NAME, { size: 3, image: IMAGE, backup: { s3Path: `s3://${s3.bucket}/scheduled`, schedule: '* * * * *' } });
    await namespaces.healthy(namespace, 3, clusterPath(namespace, NAME));
    const condition = (cr: any, type: string) => cr.status?.conditions?.find((c: any) => c.type === type);
    const until = (what: string, test: (cr: any) => boolean, deadlineMs: number) => eventually(what, async () => {
      const cr = await client.request('GET', clusterPath(namespace, NAME));
      return test(cr) ? cr : undefined;
    }, deadlineMs, 500, () => (jobs!.errors.length > 0 ? jobs!.errors.join('; ') : undefined));

    // The first run starts on the next minute; its pods fail (backoff limit 2: three tries), and the Job fails.
    const failing = await until('BackupFailing', (cr) => condition(cr, 'BackupFailing')?.status === 'True', 150_000);
    expect(condition(failing, 'BackupFailing')).toMatchObject({ reason: 'LastRunFailed', message: expect.stringMatching(/^backup Job kv-backup-\d+ failed at /) });
    expect(failing.status.lastBackupFailureTime).toEqual(expect.any(String));
    expect(failing.status.lastBackupTime).toBeUndefined();
    const failedRuns = jobs.runs.filter((r) => r.code !== 0);
    expect(failedRuns.length).toBeGreaterThanOrEqual(3);
    for (const run of failedRuns) expect(run.output).toMatch(/dkv backup: failed: .*(ECONNREFUSED|connect)/);

    // Two scheduled runs after the CronJob's creation with no success: stale.
    const stale = await until('BackupStale', (cr) => condition(cr, 'BackupStale')?.status === 'True', 150_000);
    expect(condition(stale, 'BackupStale')).toMatchObject({ reason: 'NoRecentSuccess', message: expect.stringContaining('with no successful backup yet') });

    await s3.resume();
    const recovered = await until('a successful backup', (cr) => Boolean(cr.status?.lastBackupTime) && condition(cr, 'BackupFailing')?.status === 'False'
      && condition(cr, 'BackupStale')?.status === 'False', 150_000);
    expect(condition(recovered, 'BackupFailing')).toMatchObject({ reason: 'LastRunSucceeded' });
    const succeeded = jobs.runs.filter((r) => r.code === 0);
    expect(succeeded.length).toBeGreaterThanOrEqual(1);
    // lastBackupTime is the successful Job's completion, after the run really finished (never the time it was scheduled).
    const job = await client.request('GET', `/apis/batch/v1/namespaces/${namespace}/jobs/${succeeded[0].job}`);
    expect(recovered.status.lastBackupTime).toBe(job.status.completionTime);
    expect(Date.parse(recovered.status.lastBackupTime)).toBeGreaterThanOrEqual(Math.floor(succeeded[0].finishedAt / 1000) * 1000);
    expect(Date.parse(recovered.status.lastBackupTime)).toBeGreaterThan(Date.parse(created.metadata.creationTimestamp));

    // The backup is in S3: a folder directly in s3Path, the cluster's own folder, with its snapshot and, last, its manifest.
    const s3Client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY } });
    try {
      const listed = await s3Client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: 'scheduled/' }));
      const files = (listed.Contents ?? []).map((o) => o.Key!.slice('scheduled/'.length));
      expect(files).toEqual(expect.arrayContaining([expect.stringMatching(/^\d{8}T\d{6}\.\d{3}Z\/manifest\.json$/), expect.stringMatching(/^\d{8}T\d{6}\.\d{3}Z\/snapshot\.db$/)]));
      expect(files.every((f) => /^\d{8}T\d{6}\.\d{3}Z\/(manifest\.json|snapshot\.db)$/.test(f))).toBe(true);
      expect(succeeded[0].output).toMatch(new RegExp(`^s3://${s3.bucket}/scheduled/\\d{8}T\\d{6}\\.\\d{3}Z/ `, 'm'));
    } finally {
      s3Client.destroy();
    }
  }, 480_000);
});
