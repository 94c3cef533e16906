// Slow: 5 real members lose their quorum, the loss must last, then one is rebuilt and four rejoin it one at a time (about 2 minutes).
/**
 * Quorum loss on real components (API server, kube-controller-manager, kwok
 * nodes) and real etcd members (test/support/etcd-kubelet.ts): with three
 * members of five stopped, the controller changes nothing, past the time
 * after which it would replace a member (healing.unhealthySeconds is 4
 * here); a recovery request is judged against the raft positions the
 * surviving members report, once the controller has seen the loss on three
 * looks for healing.quorumLossSeconds: one naming a member that does not
 * answer, or one behind another survivor, is refused with the reason, a
 * Healing condition and one Event, and removed; `auto` chooses the most
 * advanced survivor and the recovery is carried out (docs/auto-healing.md,
 * "Quorum loss"): the survivor is rebuilt as a one-member cluster by its
 * recover init container, the other four join it empty one at a time (the
 * invariant monitor watches from the rebuild on: before it there is no
 * quorum to keep), and every member serves every key the survivor had.
 *
 * Five members, not three: a member behind another that also answers needs
 * two survivors without a quorum, which three members cannot be (two of
 * three are a quorum, and the one behind would catch up).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadDefaultConfig } from '../../api/config.js';
import { customResourceDefinition } from '../../api/crd.js';
import { EtcdMembership } from '../../engines/etcd/membership.js';
import { KubeClient, resourcePath } from '../../kube/client.js';
import { createLogger } from '../../kube/log.js';
import { Controller } from '../../reconciler/core/controller.js';
import { locateBinaries, startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { createNamespace, describeWithCluster, eventually, installCrd } from '../cluster/kube.js';
import { LATER_BINARIES_BUILD_MS } from '../cluster/binaries.js';
import { byRole, synth } from '../generator/support.js';
import { EtcdKubelet } from '../support/etcd-kubelet.js';
import { apiServerSecrets, b64, etcdPost, LocalEtcdCluster, memberClientTls, writeOrders } from '../support/etcd-members.js';
import { backupTools } from '../support/s3-server.js';
import { InvariantMonitor } from '../support/invariant-monitor.js';
import { clusterPath, createCluster } from './controller-harness.js';

const defaults = loadDefaultConfig();
const UNHEALTHY_SECONDS = 4;
/** The loss must be seen this long (and on 3 looks) before a request is acted on: short here, 60 s by default. */
const QUORUM_LOSS_SECONDS = 2;
const config = { ...defaults, healing: { ...defaults.healing, unhealthySeconds: UNHEALTHY_SECONDS, quorumLossSeconds: QUORUM_LOSS_SECONDS } };
const RECOVER = config.healing.recoveryAnnotation;
const NAME = 'kv';
const SIZE = 5;
const KEYS = 500;
const pods = Array.from({ length: SIZE }, (_, i) => `${NAME}-${i}`);

describeWithCluster('quorum loss on a real etcd cluster of 5: hands-off, a recovery request judged, and carried out', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let namespace: string;
  let dir: string;
  let cluster: LocalEtcdCluster;
  let kubelet: EtcdKubelet;
  let controller: Controller | undefined;
  const membership = () => new EtcdMembership(() => pods, (pod) => cluster.addressOf(pod).clientUrl, 1000, undefined, memberClientTls(cluster));
  const status = () => client.request('GET', clusterPath(namespace, NAME));
  const condition = async (type: string) => (await status()).status?.conditions?.find((c: any) => c.type === type);
  const events = async (reason: string): Promise<string[]> =>
    (await client.request('GET', `/api/v1/namespaces/${namespace}/events`)).items.filter((e: any) => e.reason === reason).map((e: any) => e.message).sort();
  const request = (value: string | null) => client.request('PATCH', clusterPath(namespace, NAME), { body: { metadata: { annotations: { [RECOVER]: value } } }, contentType: 'application/merge-patch+json' });
  const startController = async () => {
    controller = new Controller({
      client: KubeClient.fromKubeconfig(plane.kubeconfigPath), config, log: createLogger(process.env.DKV_TEST_LOG_LEVEL ?? 'silent'), namespace, workers: 2, backoff: { baseMs: 200, maxMs: 2000 },
      memberAddresses: { client: (_ns, pod) => cluster.addressOf(pod).clientUrl, peer: (_ns, pod) => cluster.addressOf(pod).peerUrl },
      memberTimeoutMs: 1000,
    });
    await controller.startCaches();
    await controller.startWorkers();
  };
  /** The leader's pod and the members' ids by pod, as kv-0..kv-3 see them. */
  const leadership = async (among: readonly string[]) => {
    for (const pod of among) {
      const s = await etcdPost(cluster.addressOf(pod).clientUrl, '/v3/maintenance/status', {}, 1000).catch(() => undefined);
      if (!s?.leader || s.leader === '0') continue;
      const list = await etcdPost(cluster.addressOf(pod).clientUrl, '/v3/cluster/member/list', {}, 1000).catch(() => undefined);
      const ids = new Map<string, string>((list?.members ?? []).map((m: any) => [m.name, m.ID]));
      const leader = [...ids].find(([, id]) => id === s.leader)?.[0];
      if (leader) return { leader, ids };
    }
    return undefined;
  };
  const transfer = (from: string, to: string, ids: Map<string, string>) => etcdPost(cluster.addressOf(from).clientUrl, '/v3/maintenance/transfer-leadership', { targetID: ids.get(to) }, 5000);
  /** Leadership off `pod`, so that pausing it leaves a leader. */
  const leaderAwayFrom = async (pod: string) => {
    const now = await eventually('a leader', () => leadership(pods), 30_000, 200);
    if (now.leader === pod) await transfer(pod, pods.find((p) => p !== pod)!, now.ids);
    await eventually(`a leader other than ${pod}`, async () => ((await leadership(pods))?.leader !== pod ? true : undefined), 30_000, 200);
  };
  /** A new leader among `among` (moved from the one in office): it starts the members outside `among` in probe state. */
  const newLeaderAmong = async (among: readonly string[]) => {
    const before = await eventually('a leader', () => leadership(among), 30_000, 200);
    await transfer(before.leader, among.find((p) => p !== before.leader)!, before.ids);
    await eventually('the new leader', async () => {
      const now = await leadership(among);
      return now && now.leader !== before.leader ? true : undefined;
    }, 30_000, 200);
  };
  /** Every `orders/` key a member serves from its own store (serializable: no leader needed), with value and revision. */
  const keysOf = async (pod: string): Promise<Map<string, string>> => {
    const all = await etcdPost(cluster.addressOf(pod).clientUrl, '/v3/kv/range', { key: b64('orders/'), range_end: b64('orders0'), serializable: true }, 10_000);
    return new Map((all.kvs ?? []).map((kv: any) => [Buffer.from(kv.key, 'base64').toString(), `${Buffer.from(kv.value, 'base64').toString()}@${kv.mod_revision}`]));
  };
  const settled = () => eventually('5 healthy voting members', async () => {
    const s = await membership().status().catch(() => undefined);
    return s && s.members.length === SIZE && s.members.every((m) => !m.learner && m.healthy) ? s : undefined;
  }, 120_000, 200);

  beforeAll(async () => {
    plane = await startControlPlane(undefined, { withNodes: { crds: [customResourceDefinition(config) as Record<string, any>] } });
    client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
    await installCrd(client);
    namespace = await createNamespace(client, 'recovery');
    dir = mkdtempSync(join(tmpdir(), 'dkv-recovery-'));
    const { statefulSet } = byRole(synth({ name: NAME, namespace, size: SIZE }, config));
    // etcdutl on the containers' PATH: the recover init container runs it.
    cluster = new LocalEtcdCluster(statefulSet, namespace, locateBinaries(['etcd']), dir, async (name) => (await client.request('GET', resourcePath('v1', 'ConfigMap', namespace, name))).data, apiServerSecrets(client, namespace), [backupTools()]);
    for (const pod of pods) await cluster.address(pod);
    kubelet = new EtcdKubelet(client, namespace, NAME, cluster);
    kubelet.start();
    await startController();
    await createCluster(client, namespace, NAME, { size: SIZE, image: 'registry.k8s.io/etcd:3.6.8-0' });
    await settled().catch((e: Error) => {
      throw new Error(`${e.message}; kubelet: ${JSON.stringify({ errors: kubelet.errors.slice(-5), init: kubelet.initRuns.map((r) => [r.pod, r.container, r.code]), exited: pods.map((p) => cluster.exited(p)) })}`);
    });
    await writeOrders(cluster.addressOf('kv-0').clientUrl, KEYS);
  }, 240_000 + LATER_BINARIES_BUILD_MS);

  afterAll(async () => {
    await controller?.stop();
    await kubelet?.stop();
    client?.close();
    await plane?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('changes nothing without a request, refuses a member that does not answer or is behind, and rebuilds from the most advanced for auto, every key intact', async () => {
    const before = (await membership().status()).members.map((m) => m.id).sort();
    // kv-4 is paused (SIGSTOP) and misses a round of writes; it resumes once the others are gone and no leader is left to
    // bring it up to date: it answers, behind kv-0. (A member restarted without a quorum would not answer at all: etcd
    // serves clients only once it has published itself through the quorum.)
    // Pausing is not enough to miss the writes: a leader streams appends to a follower it replicates to without waiting for
    // its answers, the kernel buffers them on the paused member's peer connections, and the member applied every one of them
    // on resuming (seen: kv-4 at kv-0's raft index 26 and revision 11, both rounds of writes, same process). A new leader
    // starts every follower in probe state and sends a silent one a single append: so leadership moves once kv-4 is paused,
    // and the writes are never sent to it.
    // The controller is away while the setup pauses kv-4 with the quorum kept: it would rightly replace a member unhealthy
    // for longer than healing.unhealthySeconds (4 s here), which the setup may take on a loaded machine (seen once).
    await controller!.stop();
    controller = undefined;
    await leaderAwayFrom('kv-4');
    const kv4 = cluster.members.get('kv-4')!.process;
    kv4.kill('SIGSTOP');
    await newLeaderAmong(['kv-0', 'kv-1', 'kv-2', 'kv-3']);
    await eventually('a round of writes without kv-4', async () => (await writeOrders(cluster.addressOf('kv-0').clientUrl, KEYS), true), 30_000, 500);
    for (const pod of ['kv-1', 'kv-2', 'kv-3']) await kubelet.crash(pod);
    // kv-0, alone, stops leading (check-quorum) or stops following its gone leader: once it answers with no leader, no
    // member is left to bring kv-4 up to date. (A fixed three election timeouts was not always enough on a loaded machine:
    // a leader still in office caught kv-4 up as it resumed.)
    await eventually('kv-0 without a leader', async () => {
      const s = await etcdPost(cluster.addressOf('kv-0').clientUrl, '/v3/maintenance/status', {}, 1000).catch(() => undefined);
      return s && (!s.leader || s.leader === '0') ? true : undefined;
    }, 30_000, 100);
    kv4.kill('SIGCONT');
    await startController();
    // No object the controller watches changes when processes die (kwok keeps the pods Ready): a touch makes it look now.
    await client.request('PATCH', clusterPath(namespace, NAME), { body: { metadata: { annotations: { 'test/look': `${Date.now()}` } } }, contentType: 'application/merge-patch+json' });
    const lostAt = Date.now();
    await eventually('QuorumLost reported', async () => ((await condition('Available'))?.reason === 'QuorumLost' ? true : undefined), 30_000, 200);
    const positions = await eventually('kv-0 and kv-4 answer, without a leader', async () => {
      const s = await membership().status().catch(() => undefined);
      const [kv0, kv4] = ['kv-0', 'kv-4'].map((p) => s?.members.find((m) => m.name === p));
      return kv0?.raftIndex !== undefined && kv4?.raftIndex !== undefined && !kv0.healthy && !kv4.healthy ? { kv0, kv4 } : undefined;
    }, 30_000, 200);
    expect(positions.kv4.raftIndex).toBeLessThan(positions.kv0.raftIndex!);

    // Hands-off: twice the time after which a member would be replaced, nothing removed, no replacement begun.
    await new Promise((r) => setTimeout(r, 2 * UNHEALTHY_SECONDS * 1000 - (Date.now() - lostAt))); // a measured window, not a wait for a condition
    expect((await membership().status()).members.map((m) => m.id).sort()).toEqual(before);
    expect((await condition('Available'))?.reason).toBe('QuorumLost');
    expect(await events('MemberReplacing')).toEqual([]);
    const claims = (await client.request('GET', resourcePath('v1', 'PersistentVolumeClaim', namespace))).items;
    expect(claims.filter((c: any) => c.metadata.deletionTimestamp || c.metadata.annotations?.[config.healing.replacementAnnotation])).toEqual([]);

    // A member that does not answer cannot be judged.
    await request('kv-2');
    // Judged once the controller has seen the loss on 3 looks for 2 s (a look every 10 s while a request waits).
    const silent = await eventually('kv-2 refused', async () => {
      const healing = await condition('Healing');
      return healing?.reason === 'RecoveryRefused' && /kv-2/.test(healing.message) ? healing : undefined;
    }, 60_000, 200);
    expect(silent.message).toMatch(/kv-2 refused: it does not answer .*the most advanced voting member that answers is kv-0 \(term \d+, index \d+.*; the request is removed$/);
    // Refused for good: the request is gone, so it can never start a recovery later.
    await eventually('the refused request removed', async () => ((await status()).metadata.annotations?.[RECOVER] === undefined ? true : undefined), 30_000, 200);

    // A member behind another survivor: the refusal names the one ahead.
    await request('kv-4');
    const behind = await eventually('kv-4 refused', async () => {
      const healing = await condition('Healing');
      return healing?.reason === 'RecoveryRefused' && /^recovery from kv-4/.test(healing.message) ? healing : undefined;
    }, 60_000, 200);
    expect(behind.message).toMatch(/recovery from kv-4 \(term \d+, index \d+.*refused: kv-0 \(term \d+, index \d+.* is more advanced/);
    // One Event per refusal, however many reconciles saw it.
    await new Promise((r) => setTimeout(r, 3000)); // a measured window: further reconciles must not repeat the Event
    const refused = await events('RecoveryRefused');
    expect(refused).toHaveLength(2);
    expect(refused.some((m) => /^recovery from kv-2 refused/.test(m)) && refused.some((m) => /^recovery from kv-4 .*refused/.test(m))).toBe(true);

    // auto: the most advanced survivor, and the recovery is carried out. What kv-0 serves now (locally: it has no leader)
    // is what every member must serve once the cluster is whole again.
    const survivor = await keysOf('kv-0');
    expect(survivor.size).toBe(KEYS);
    const requestedAt = Date.now();
    await request('auto');
    const started = await eventually('RecoveryStarted', async () => (await events('RecoveryStarted'))[0], 60_000, 200);
    expect(started).toMatch(/^recovering from kv-0 \(term \d+, index \d+, revision \d+\), the most advanced of the 2 voting members that answer; the others join it empty/);
    const record = (await client.request('GET', resourcePath('v1', 'ConfigMap', namespace, `${NAME}-recovery`))).data;
    expect(record).toMatchObject({ DKV_RECOVERY_POD: 'kv-0', DKV_RECOVERY_MEMBER_ID: positions.kv0.id });

    // kv-0 restarts once, its recover init container rebuilds a one-member cluster from its data (a new member id), and
    // it holds a quorum alone: from here on the invariants hold while the others join it empty, one at a time.
    await eventually('kv-0 rebuilt as a one-member cluster', async () => {
      const s = await membership().status().catch(() => undefined);
      const kv0 = s?.members.find((m) => m.name === 'kv-0');
      return kv0?.healthy && !before.includes(kv0.id) ? true : undefined;
    }, 60_000, 200);
    const rebuiltAt = Date.now();
    const monitor = new InvariantMonitor(membership());
    monitor.start();
    // What the members and the cluster's conditions said last: printed if the wait times out (a slow replacement and a stuck
    // one look alike from here; a busy-core CI run once timed out here, and passed alone in 127 s).
    let seenLast = 'nothing answered';
    const whole = await eventually('5 healthy voting members, every one new', async () => {
      const s = await membership().status().catch(() => undefined);
      if (s) seenLast = s.members.map((m) => `${m.name || '(unstarted)'} ${m.id}${m.learner ? ' learner' : ''}${m.healthy ? '' : ` unhealthy (${m.problem ?? '?'})`}${before.includes(m.id) ? ' old' : ''}`).join('; ');
      return s && s.members.length === SIZE && s.members.every((m) => !m.learner && m.healthy && !before.includes(m.id)) ? s : undefined;
    }, 180_000, 200).catch(async (e: Error) => {
      const conditions = ((await status().catch(() => undefined))?.status?.conditions ?? []).map((c: any) => `${c.type}=${c.status} ${c.reason}: ${c.message}`).join(' | ');
      throw new Error(`${e.message}\nmembers seen last: ${seenLast}\nconditions: ${conditions}`);
    });
    const wholeAt = Date.now();
    // The request is removed with the Event Recovered (the Healing condition says Recovered, then, on a reconcile that saw
    // status before that write, Healthy: both say nothing is under way).
    await eventually('the request removed, Recovered', async () => {
      const cr = await status();
      const healing = cr.status?.conditions?.find((c: any) => c.type === 'Healing');
      const recovered = await events('Recovered');
      if (cr.metadata.annotations?.[RECOVER] !== undefined || recovered.length === 0 || !['Recovered', 'Healthy'].includes(healing?.reason)) {
        throw new Error(`request ${cr.metadata.annotations?.[RECOVER]}, ${recovered.length} Recovered Event(s), Healing ${healing?.reason}: ${healing?.message}`);
      }
      return true;
    }, 60_000, 200);
    await eventually('Available again', async () => ((await condition('Available'))?.status === 'True' ? true : undefined), 60_000, 200);
    await monitor.stop();
    expect(monitor.violations).toEqual([]);
    expect(await events('Recovered')).toEqual([expect.stringMatching(/^recovered from kv-0 \(member \d+\): 5 of 5 voting members healthy/)]);
    await expect(client.request('GET', resourcePath('v1', 'ConfigMap', namespace, `${NAME}-recovery`))).rejects.toMatchObject({ status: 404 });
    expect(whole.members.map((m) => m.name).sort()).toEqual(pods);

    // Every member serves every key kv-0 had, with its value and revision; kv-0 was rebuilt once, and no other member was.
    for (const pod of pods) expect({ pod, keys: await keysOf(pod) }).toEqual({ pod, keys: survivor });
    // (A pod's recover container writes to one log across its runs: kv-0's holds its first start's and the rebuild's.)
    const recoverLogs = new Map(kubelet.initRuns.filter((r) => r.container === 'recover').map((r) => [r.pod, r.log]));
    const rebuilt = (pod: string) => (readFileSync(recoverLogs.get(pod)!, 'utf8').match(/^rebuilt /gm) ?? []).length;
    expect(pods.map((pod) => [pod, rebuilt(pod)])).toEqual(pods.map((pod) => [pod, pod === 'kv-0' ? 1 : 0]));
    process.stdout.write(`quorum-loss recovery: ${((wholeAt - requestedAt) / 1000).toFixed(1)} s from the annotation to 5 healthy voting members `
      + `(kv-0 rebuilt after ${((rebuiltAt - requestedAt) / 1000).toFixed(1)} s); ${survivor.size} of ${survivor.size} keys intact on each of the 5 members; `
      + `invariants after the rebuild: ${monitor.violations.length} violations, at most ${monitor.maxDown()} voting member down\n`);
  }, 420_000);
});
