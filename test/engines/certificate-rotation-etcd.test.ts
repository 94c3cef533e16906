/**
 * Certificate rotation on three real etcd members under a steady TLS client
 * load and the invariant monitor, driven by the controller's own rotation
 * step (reconciler/day2/certificate-rotation-step.ts) against the Secrets
 * the members mount, the kubelet's part played by swapping the mounted
 * files as its atomic writer does: leaves renewed when two thirds of their
 * validity have passed, then the issuing CA replaced (trusted, leaves
 * re-issued, the old one revoked through the members' CRL). Not one request
 * fails, no member process restarts, and afterwards a client certificate of
 * the old issuing CA is refused while the new one is served. A second load's
 * history (put, get, delete, compare-and-swap through every member, with the
 * certificate the files hold at each call) is linearizable, checked by
 * porcupine.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { locateBinaries } from '../cluster/control-plane.js';
import { byRole, synth } from '../generator/support.js';
import { etcdPost, b64, issueTestSecrets, LocalEtcdCluster, type StatefulSetLike } from '../support/etcd-members.js';
import { ClientLoad } from '../support/etcd-load.js';
import { expectLinearizable, HistoryRecorder } from '../support/linearizability.js';
import { InvariantMonitor } from '../support/invariant-monitor.js';
import { eventually } from '../support/eventually.js';
import { httpProbe } from '../support/http-probe.js';
import { loadDefaultConfig } from '../../api/config.js';
import { clusterIdentity } from '../../model/cluster-identity.js';
import { describeCertificate, splitBundle } from '../../model/certificates.js';
import { EtcdMembership } from '../../engines/etcd/membership.js';
import { probeMember } from '../../engines/etcd/tls-probe.js';
import { tlsSecretNames } from '../../engines/etcd/tls-files.js';
import type { EtcdClientTls } from '../../engines/etcd/etcd-http.js';
import { certificateRotationStep, type RotationDecision } from '../../reconciler/day2/certificate-rotation-step.js';

const describeWithEtcd = process.env.DKV_SKIP_CLUSTER ? describe.skip : describe;
const NAMESPACE = 'shop';
const DAY_MS = 86_400_000;
const config = loadDefaultConfig();
const identity = clusterIdentity('kv', config);
const names = tlsSecretNames(config, identity);

describeWithEtcd('certificate rotation on real etcd members, under load, without a restart', () => {
  let dir: string;
  let cluster: LocalEtcdCluster;
  let secrets: Map<string, Record<string, string>>;
  const versions = new Map<string, number>();
  const pods = ['kv-0', 'kv-1', 'kv-2'];
  const clientTls = (): EtcdClientTls => { const c = secrets.get(names.client)!; return { ca: c['ca.crt'], cert: c['tls.crt'], key: c['tls.key'] }; };
  const pids = () => pods.map((p) => cluster.members.get(p)!.process.pid);
  const figures: string[] = [];

  /** One reconcile's rotation step, its updates applied as the API server would (refused when the version moved), then the kubelet's swap. */
  async function reconcileOnce(requested?: string): Promise<RotationDecision> {
    const read = (name: string) => ({ name, resourceVersion: String(versions.get(name) ?? 1), data: { ...secrets.get(name)! } });
    const decision = await certificateRotationStep({
      identity, namespace: NAMESPACE, config, authority: read(names.authority), member: read(names.member), client: read(names.client),
      members: pods.map((pod) => ({ pod, clientUrl: cluster.addressOf(pod).clientUrl })), requested, now: new Date(),
      probe: (url, tls) => probeMember(url, tls, 2000),
    });
    for (const update of decision.update) {
      expect(update.resourceVersion).toBe(String(versions.get(update.name) ?? 1));
      secrets.set(update.name, { ...update.data });
      versions.set(update.name, (versions.get(update.name) ?? 1) + 1);
    }
    await cluster.refreshSecrets();
    return decision;
  }

  /** Reconciles until `done` says so, recording when each rotation phase began. */
  async function reconcileUntil(what: string, done: (d: RotationDecision) => boolean, requested?: string): Promise<{ ms: number; phases: string[] }> {
    const start = Date.now();
    const phases: string[] = [];
    for (;;) {
      const decision = await reconcileOnce(requested);
      const phase = decision.status.rotation?.phase ?? 'Idle';
      if (phases.at(-1)?.split(' ')[0] !== phase) phases.push(`${phase} +${Date.now() - start} ms`);
      if (done(decision)) return { ms: Date.now() - start, phases };
      if (Date.now() - start > 60_000) throw new Error(`${what}: not done after 60 s (${phases.join(', ')}; ${JSON.stringify(decision.status)})`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dkv-rotation-'));
    const { statefulSet, memberConfig } = byRole(synth({ name: 'kv', namespace: NAMESPACE, size: 3, image: 'registry.k8s.io/etcd:3.6.8-0' }));
    // Issued 250 days ago: the leaves (365 days) have used more than two thirds of their validity, the issuing CA (730) a third of its.
    ({ secrets } = await issueTestSecrets('kv', NAMESPACE, new Date(Date.now() - 250 * DAY_MS)));
    cluster = new LocalEtcdCluster(statefulSet as unknown as StatefulSetLike, NAMESPACE, locateBinaries(['etcd']), dir, async () => ({ ...memberConfig!.data }), async (name) => secrets.get(name));
    for (let i = 0; i < 3; i++) await cluster.start(i);
    await eventually('3 members ready', async () => {
      for (const pod of pods) if ((await httpProbe(`${(await cluster.address(pod)).metricsUrl}/readyz`)).status !== 200) return undefined;
      return true;
    }, 60_000, 100, () => pods.map((p) => cluster.exited(p)).find(Boolean));
  }, 120_000);

  afterAll(async () => {
    if (figures.length > 0) console.log(`certificate rotation, 3 real members (etcd 3.6.8):\n${figures.join('\n')}`);
    await cluster?.stopAll();
    rmSync(dir, { recursive: true, force: true });
  });

  it('renews the leaves, then rotates the issuing CA, with 0 failed requests, no restart and no member down; then refuses the old issuer\'s certificates', async () => {
    const membership = new EtcdMembership(() => pods, (pod) => cluster.addressOf(pod).clientUrl, 1000, undefined, clientTls);
    const monitor = new InvariantMonitor(membership);
    // The load calls each member with the certificate its files hold now (etcdPost: the cluster's mounted certificate), as a client reloading its files.
    const load = new ClientLoad(cluster, pods);
    const history = new HistoryRecorder(() => pods.map((p) => cluster.addressOf(p).clientUrl), { pauseMs: 60 });
    const before = pids();
    monitor.start();
    load.start(20_000);
    history.start();
    try {
      // Leaf rotation: both leaves are due; each member serves the new member certificate on its next handshake.
      const oldMemberLeaf = describeCertificate(secrets.get(names.member)!['tls.crt'])!;
      const leaves = await reconcileUntil('leaf renewal', (d) => d.update.length === 0 && d.status.rotation?.phase === 'Idle');
      const renewed = describeCertificate(secrets.get(names.member)!['tls.crt'])!;
      expect(renewed.serial).not.toBe(oldMemberLeaf.serial);
      expect(renewed.notAfter.getTime()).toBeGreaterThan(Date.now() + 364 * DAY_MS);
      const served = await eventually('every member serves the renewed certificate', async () => {
        const seen = await Promise.all(pods.map((p) => probeMember(cluster.addressOf(p).clientUrl, clientTls(), 2000)));
        return seen.every((s) => s.answered && s.servedFingerprint === renewed.fingerprint256) || undefined;
      }, 10_000, 100);
      expect(served).toBe(true);
      const failedAfterLeaves = load.requests.filter((r) => r.error).length;
      figures.push(`  leaf rotation: ${leaves.ms} ms (${leaves.phases.join(', ')}); requests so far ${load.requests.length}, failed ${failedAfterLeaves}`);

      // CA rotation, on demand (the annotation): Trusting → Reissuing → Dropping → Idle.
      const oldClient = clientTls();
      const oldIssuer = splitBundle(oldClient.cert)[1];
      const ca = await reconcileUntil('CA rotation', (d) => d.status.rotation?.phase === 'Idle' && d.update.length === 0 && d.status.rotation.lastRequest === 'rotate-1', 'rotate-1');
      expect(ca.phases.map((p) => p.split(' ')[0])).toEqual(['Trusting', 'Reissuing', 'Dropping', 'Idle']);
      const newIssuer = splitBundle(clientTls().cert)[1];
      expect(describeCertificate(newIssuer)!.serial).not.toBe(describeCertificate(oldIssuer)!.serial);
      figures.push(`  CA rotation: ${ca.ms} ms (${ca.phases.join(', ')})`);

      // After the drop: the old issuer's client certificate is refused by every member, on the client port, over a new connection; the new one answered.
      for (const pod of pods) {
        const url = cluster.addressOf(pod).clientUrl;
        expect((await probeMember(url, oldClient, 2000)).answered).toBe(false);
        expect((await probeMember(url, clientTls(), 2000)).answered).toBe(true);
        await expect(etcdPost(url, '/v3/kv/range', { key: b64('load/kv-0') })).resolves.toBeDefined();
      }
      // Refused for its revoked issuer (etcd's CRL check), not for anything else.
      expect(pods.some((p) => /certificate serial [0-9a-f]+ revoked/.test(readFileSync(cluster.members.get(p)!.log, 'utf8')))).toBe(true);
      await expectLinearizable('leaf renewal and CA rotation (Trusting, Reissuing, Dropping)', history, cluster.addressOf(pods[0]).clientUrl);
    } finally {
      await load.stop();
      await history.stop(cluster.addressOf(pods[0]).clientUrl).catch(() => undefined);
      await monitor.stop();
    }
    const failed = load.requests.filter((r) => r.error);
    figures.push(`  requests ${load.requests.length}, failed ${failed.length}; longest election ${monitor.longestElectionMs} ms; most voters down at once ${monitor.maxDown()}; member processes restarted ${before.filter((pid, i) => pid !== pids()[i] || cluster.exited(pods[i])).length}`);
    const downs = monitor.readings.filter((r) => r.down > 0).map((r) => `${r.at}: ${r.problems}`);
    if (downs.length > 0) console.log(`readings with a member down:\n${downs.join('\n')}`);
    expect(failed.map((r) => `${r.pod} ${r.kind}: ${r.error}`)).toEqual([]);
    expect(monitor.violations).toEqual([]);
    expect(monitor.maxDown()).toBe(0);
    expect(pids()).toEqual(before);
    expect(pods.map((p) => cluster.exited(p))).toEqual([undefined, undefined, undefined]);
  }, 120_000);
});
