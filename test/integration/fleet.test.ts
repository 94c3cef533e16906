/**
 * Fleet mode on real components: two Kubernetes clusters (a primary and a
 * standby region, each its own etcd and kube-apiserver) run the same
 * DistributedKV definitions with real `dkv controller` processes (two
 * replicas in the primary, electing their local leader as deployed, one in
 * the standby), and the fleet lock lives on a third, designated coordination
 * API server (the shared test control plane). Both controllers export the definitions into
 * one real S3-compatible server (versitygw) every second when they may.
 * Each controller reaches the coordination server through a loopback proxy
 * the test can partition. No kube-controller-manager runs: the backup
 * CronJobs' `suspend` is what decides whether a cluster's backups run, and
 * an invariant monitor samples both clusters' CronJobs all along, failing if
 * both are ever unsuspended at once; the S3 exports' writers, in time order,
 * must change hands once per handover and never interleave.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { parse, stringify } from 'yaml';
import { customResourceDefinition } from '../../api/crd.js';
import { loadDefaultConfig } from '../../api/config.js';
import { packageRoot } from '../../api/package-root.js';
import { fleetLockTimings } from '../../reconciler/process/main.js';
import { KubeClient, resourcePath } from '../../kube/client.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { createNamespace, describeWithCluster, eventually, testClient } from '../cluster/kube.js';
import { startLoopbackProxy, type LoopbackProxy } from '../cluster/loopback-proxy.js';
import { establishCrd } from '../support/crds.js';
import { reportTiming } from '../support/timing-figures.js';
import { S3_ACCESS_KEY, S3_SECRET_KEY, startS3Server, type S3Server } from '../support/s3-server.js';
import { clusterPath, createCluster } from './controller-harness.js';

const NAMESPACE = 'shop';
/** The local leader Lease's timings; the fleet lock's are twice these (fleetLockTimings). */
const LEASE_MS = 2000;
const RENEW_MS = 1500;
const RETRY_MS = 250;
const FLEET = fleetLockTimings({ leaseDurationMs: LEASE_MS, renewDeadlineMs: RENEW_MS, retryPeriodMs: RETRY_MS });
/**
 * On a quiet machine the fleet lock is held again at most this long after its holder died: its last renewal
 * was at most a retry before; a candidate sees it up to a jittered retry later, waits the fleet lease from
 * then, and tries again up to a jittered retry after that; and a second for the round trips. A figure, beside
 * the takeover measured (test/support/timing-figures.ts): the test asserts that the lease was waited out.
 */
const TAKEOVER_BOUND_MS = FLEET.leaseDurationMs + 2 * 1.2 * FLEET.retryPeriodMs + 1000;

interface Member {
  readonly name: string;
  readonly plane: ControlPlane;
  readonly client: KubeClient;
  readonly proxy: LoopbackProxy;
  /** The controller replicas, by identity. */
  readonly processes: Map<string, ChildProcess>;
}

const defaults = loadDefaultConfig();

describeWithCluster('a fleet of two Kubernetes clusters with one writer of what is global', () => {
  let coordination: KubeClient;
  let leaseNamespace: string;
  let s3: S3Server;
  let s3Client: S3Client;
  let dir: string;
  let configFile: string;
  const members: Member[] = [];
  const violations: string[] = [];
  let monitoring = true;
  let monitor: Promise<void> | undefined;

  const member = (name: string) => members.find((m) => m.name === name)!;
  const cronJobSuspended = async (m: Member) =>
    (await m.client.request('GET', resourcePath('batch/v1', 'CronJob', NAMESPACE, 'orders-backup'))).spec.suspend === true;
  const standby = async (m: Member) =>
    (await m.client.request('GET', clusterPath(NAMESPACE, 'orders'))).status?.conditions?.find((c: { type: string }) => c.type === 'Standby');
  const holder = async () =>
    (await coordination.request('GET', resourcePath('coordination.k8s.io/v1', 'Lease', leaseNamespace, defaults.fleet.leaseName)).catch(() => undefined))?.spec?.holderIdentity ?? '';

  /** The S3 exports, oldest first: each one's folder and the API server it was read from (its writer). */
  async function exports(): Promise<{ stamp: string; writer: string }[]> {
    const keys = ((await s3Client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: 'definitions/' }))).Contents ?? []).map((o) => o.Key!);
    const manifests = keys.filter((k) => k.endsWith('/manifest.json')).sort();
    return Promise.all(manifests.map(async (key) => {
      const manifest = JSON.parse(await (await s3Client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))).Body!.transformToString());
      const server: string = manifest.server;
      return { stamp: key.split('/')[1], writer: members.find((m) => m.plane.server === server)?.name ?? server };
    }));
  }

  function startController(m: Member, identity = 'controller-0'): void {
    const kubeconfig = join(dir, `${m.name}-coordination.kubeconfig`);
    const text = parse(readFileSync(process.env.DKV_TEST_KUBECONFIG!, 'utf8'));
    for (const c of text.clusters) c.cluster.server = m.proxy.url;
    writeFileSync(kubeconfig, stringify(text));
    m.processes.set(identity, spawn(process.execPath, [
      join(packageRoot(), 'bin', 'dkv.js'), 'controller', '--kubeconfig', m.plane.kubeconfigPath, '--config', configFile,
      '--leader-election-namespace', NAMESPACE, '--health-addr', '127.0.0.1:0', '--webhook-addr', 'off', '--identity', identity,
      '--fleet-kubeconfig', kubeconfig, '--fleet-member', m.name,
      '--lease-duration-ms', String(LEASE_MS), '--renew-deadline-ms', String(RENEW_MS), '--retry-period-ms', String(RETRY_MS),
    ], { stdio: ['ignore', 'ignore', process.env.DKV_TEST_LOG_LEVEL ? 'inherit' : 'ignore'], env: { ...process.env, AWS_ACCESS_KEY_ID: S3_ACCESS_KEY, AWS_SECRET_ACCESS_KEY: S3_SECRET_KEY, DKV_LOG_LEVEL: process.env.DKV_TEST_LOG_LEVEL ?? 'error' } }));
  }

  /** The fleet member whose controller holds the fleet lock now ('' if none). */
  const activeMember = async () => (await holder()).split('/')[0];
  /** The local leader of a member's controllers. */
  const localLeader = async (m: Member) =>
    (await m.client.request('GET', resourcePath('coordination.k8s.io/v1', 'Lease', NAMESPACE, defaults.controller.leaseName))).spec?.holderIdentity as string;

  beforeAll(async () => {
    coordination = testClient();
    leaseNamespace = await createNamespace(coordination, 'fleet');
    dir = mkdtempSync(join(tmpdir(), 'dkv-fleet-'));
    s3 = await startS3Server();
    s3Client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY } });
    configFile = join(dir, 'dkv.config.yaml');
    writeFileSync(configFile, stringify({
      fleet: { leaseName: defaults.fleet.leaseName, leaseNamespace },
      backup: { s3: { endpoint: s3.endpoint, forcePathStyle: true }, definitions: { s3Path: `s3://${s3.bucket}/definitions`, schedule: '* * * * * *', retain: 1000 } },
    }));
    for (const name of ['primary', 'standby']) {
      const plane = await startControlPlane();
      const client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
      members.push({ name, plane, client, proxy: await startLoopbackProxy(coordination.server), processes: new Map() });
      await establishCrd(client, customResourceDefinition(defaults));
      await client.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } } });
      // The same definitions in both, as one GitOps repository feeds them.
      await createCluster(client, NAMESPACE, 'orders', { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', backup: { s3Path: `s3://${s3.bucket}/backups`, schedule: '*/5 * * * *' } });
      await createCluster(client, NAMESPACE, 'sessions', { size: 1, image: 'registry.k8s.io/etcd:3.6.8-0' });
    }
  }, 240_000);

  afterAll(async () => {
    monitoring = false;
    await monitor;
    for (const m of members) {
      for (const child of m.processes.values()) child.kill('SIGKILL');
      await m.proxy.close();
      m.client.close();
      await m.plane.stop();
    }
    s3Client?.destroy();
    await s3?.stop();
    coordination?.close();
  });

  it('the primary wins the fleet lock: its backups run and it exports; the standby suspends its backups and says Standby, naming the primary', async () => {
    startController(member('primary'), 'controller-0');
    startController(member('primary'), 'controller-1');
    await eventually('the primary to hold the fleet lock', async () => ((await holder()).startsWith('primary/') ? true : undefined), 30_000, 100);
    startController(member('standby'));
    await eventually('the standby to stand by, naming the primary', async () => {
      const condition = await standby(member('standby'));
      return condition?.reason === 'ActiveElsewhere' && (await cronJobSuspended(member('standby'))) ? condition : undefined;
    }, 30_000, 100).then((condition) => expect(condition).toMatchObject({ status: 'True', message: expect.stringContaining('Kubernetes cluster primary holds the fleet lock') }));
    await eventually('the primary to be Active with its backups running', async () =>
      ((await standby(member('primary')))?.reason === 'Active' && !(await cronJobSuspended(member('primary'))) ? true : undefined), 30_000, 100);
    // From now on, both clusters' backups are never on at once.
    monitor = (async () => {
      for (let i = 0; monitoring && i < 5_000; i++) {
        const [a, b] = await Promise.all(members.map((m) => cronJobSuspended(m).catch(() => true)));
        if (!a && !b) violations.push(`both CronJobs unsuspended at ${new Date().toISOString()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await eventually('two exports by the primary', async () => ((await exports()).filter((e) => e.writer === 'primary').length >= 2 ? true : undefined), 20_000, 200);
    expect((await exports()).every((e) => e.writer === 'primary')).toBe(true);
  }, 90_000);

  it('when the active controller is killed, its successor waits out its lease, fences its cluster\'s backups and holds the fleet lock', async () => {
    const primary = member('primary');
    const killed = await localLeader(primary);
    const holderBefore = await holder();
    expect(holderBefore).toBe(`primary/${killed}`);
    primary.processes.get(killed)!.kill('SIGKILL');
    const killedAt = Date.now();
    const next = await eventually('another controller to hold the fleet lock', async () => {
      const now = await holder();
      return now !== '' && now !== holderBefore ? now : undefined;
    }, 30_000, 50);
    const takeoverMs = Date.now() - killedAt;
    // Its last renewal was at most a jittered retry before the kill: the successor waited out the rest of its lease, no less.
    expect(takeoverMs).toBeGreaterThanOrEqual(FLEET.leaseDurationMs - 1.2 * FLEET.retryPeriodMs);
    reportTiming({ what: `fleet: the lock held again by ${next} after the active controller was SIGKILLed`, ms: takeoverMs, boundMs: TAKEOVER_BOUND_MS,
      bound: `fleet lease ${FLEET.leaseDurationMs} ms + 2 jittered retries + 1 s` });
    const nowActive = member(next.split('/')[0]);
    const nowStandby = members.find((m) => m !== nowActive)!;
    await eventually('the active side\'s backups to run and the other\'s to be suspended', async () =>
      ((await standby(nowActive))?.reason === 'Active' && !(await cronJobSuspended(nowActive)) && (await cronJobSuspended(nowStandby)) ? true : undefined), 30_000, 100);
    const exportsAtTakeover = (await exports()).length;
    await eventually('an export by the active side after the takeover', async () => {
      const list = await exports();
      return list.length > exportsAtTakeover && list[list.length - 1].writer === nowActive.name ? true : undefined;
    }, 20_000, 200);
  }, 90_000);

  it('never yields two writers when the active side cannot reach the lock, and hands over once it gave up', async () => {
    const active = member(await activeMember());
    const other = members.find((m) => m !== active)!;
    expect(monitor).toBeDefined();
    active.proxy.partitioned = true;
    const cutAt = Date.now();
    await eventually('the partitioned side to fence its backups', async () => ((await cronJobSuspended(active)) ? true : undefined), 20_000, 50);
    const fencedMs = Date.now() - cutAt;
    await eventually('the other side to hold the fleet lock', async () => ((await activeMember()) === other.name ? true : undefined), 20_000, 50);
    const takeoverMs = Date.now() - cutAt;
    process.stdout.write(`fleet partition: active side fenced after ${fencedMs} ms, other side took the lock after ${takeoverMs} ms\n`);
    expect(fencedMs).toBeLessThan(takeoverMs);
    await eventually('the new active side\'s backups to run', async () => (!(await cronJobSuspended(other)) ? true : undefined), 20_000, 100);
    await eventually('an export by the new active side', async () => {
      const list = await exports();
      return list.length > 0 && list[list.length - 1].writer === other.name ? true : undefined;
    }, 20_000, 200);
    // The partition heals: the old active side sees the new holder and stays standby.
    active.proxy.partitioned = false;
    await eventually('the healed side to say Standby, naming the new holder', async () => {
      const condition = await standby(active);
      return condition?.status === 'True' && condition.message.includes(`Kubernetes cluster ${other.name} holds`) ? true : undefined;
    }, 30_000, 100);
    monitoring = false;
    await monitor;
    expect(violations).toEqual([]);
    // In time order the exports' writer changed hands once per handover, never back and forth.
    const writers = (await exports()).map((e) => e.writer);
    const runs = writers.filter((w, i) => i === 0 || w !== writers[i - 1]);
    expect(runs[runs.length - 1]).toBe(other.name);
    expect(runs.length).toBeLessThanOrEqual(3); // primary, then whoever took over from the killed controller, then the partition's winner
    for (let i = 1; i < runs.length; i++) expect(runs[i]).not.toBe(runs[i - 1]);
  }, 120_000);
});
