// Slow: six replacements of real members, each waiting for healing.unhealthySeconds (8 s here), a learner to catch up, or a node to go (about 4 minutes).
/**
 * Member replacement on real components (API server, kube-controller-manager,
 * kwok nodes) and real etcd members (test/support/etcd-kubelet.ts runs each
 * scheduled pod's member): a member whose data is gone is removed, its claim
 * and pod deleted, and it joins again empty as a learner, promoted once
 * caught up; a member that only restarted is not replaced. The invariant
 * monitor reads the membership every 150 ms throughout.
 *
 * The configuration's healing.unhealthySeconds is 8 here (600 by default) so
 * that the timeout path runs within the test's time, and
 * healing.corruptionCheckSeconds 3 (4 hours by default) so that the members'
 * generated corruption check finds a corrupt member within it.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadDefaultConfig } from '../../api/config.js';
import { resourcePath, type KubeClient } from '../../kube/client.js';
import { describeWithCluster, eventually } from '../cluster/kube.js';
import { LATER_BINARIES_BUILD_MS } from '../cluster/binaries.js';
import type { EtcdKubelet } from '../support/etcd-kubelet.js';
import { countOrders, writeOrders, type LocalEtcdCluster } from '../support/etcd-members.js';
import { EtcdTestBed } from '../support/etcd-test-bed.js';
import { expectLinearizable, HistoryRecorder } from '../support/linearizability.js';
import { InvariantMonitor, type Reading } from '../support/invariant-monitor.js';
import { clusterPath, createCluster } from './controller-harness.js';

const defaults = loadDefaultConfig();
const UNHEALTHY_SECONDS = 8;
const CORRUPTION_CHECK_SECONDS = 3;
const config = { ...defaults, healing: { ...defaults.healing, unhealthySeconds: UNHEALTHY_SECONDS, corruptionCheckSeconds: CORRUPTION_CHECK_SECONDS } };
const NAME = 'kv';
const SIZE = 5;
const KEYS = 1000;
const pods = Array.from({ length: SIZE }, (_, i) => `${NAME}-${i}`);

describeWithCluster('member replacement on a real etcd cluster of 5', () => {
  let bed: EtcdTestBed;
  let client: KubeClient;
  let namespace: string;
  let dir: string;
  let cluster: LocalEtcdCluster;
  let kubelet: EtcdKubelet;
  const membership = () => bed.membership();
  const events = (reason: string) => bed.events(reason);

  const status = () => client.request('GET', clusterPath(namespace, NAME));
  const claimPath = (pod: string) => resourcePath('v1', 'PersistentVolumeClaim', namespace, `data-${pod}`);
  let lastSeen = '';
  /** Every member a healthy voter, the StatefulSet at 5, no replacement under way; on a timeout, what was seen last. */
  const settled = async (deadlineMs = 120_000) => eventually('5 healthy voting members', async () => {
    const s = await membership().status().catch(() => undefined);
    const cr = await status();
    const healing = cr.status?.conditions?.find((c: any) => c.type === 'Healing');
    lastSeen = `members ${s ? s.members.map((m) => `${m.name || m.id}${m.learner ? ' (learner)' : ''}: ${m.healthy ? 'healthy' : m.problem ?? 'unhealthy'}`).join(', ') : 'unread'}; `
      + `Healing ${healing?.status} ${healing?.reason}: ${healing?.message}`;
    if (!s || s.members.length !== SIZE || s.members.some((m) => m.learner || !m.healthy)) return undefined;
    return healing?.status === 'False' ? s : undefined;
  }, deadlineMs, 200).catch((e: Error) => {
    const runs = kubelet.initRuns.slice(-4).map((r) => `${r.pod} ${r.container} exit ${r.code}: ${r.output.trim().split('\n').at(-1)}`).join(' | ');
    throw new Error(`${e.message}; last seen: ${lastSeen}; the test kubelet's errors: ${kubelet.errors.slice(-5).join(' | ') || 'none'}; its last init runs: ${runs || 'none'}`);
  });
  /** No object the controller watches changes when a member fails or an alarm is raised: a touch of the cluster's metadata makes it look now rather than at its periodic look (30 s). */
  const look = () => client.request('PATCH', clusterPath(namespace, NAME), { body: { metadata: { annotations: { 'test/look': `${Date.now()}` } } }, contentType: 'application/merge-patch+json' });
  /** The member's data directory: the kubelet gives each claim (by uid) its own. */
  const dataDirectory = async (pod: string) => join(dir, `${pod}-${(await client.request('GET', claimPath(pod))).metadata.uid}`);
  const wipe = async (pod: string) => {
    const data = await dataDirectory(pod);
    await kubelet.crash(pod);
    expect(existsSync(data)).toBe(true);
    rmSync(data, { recursive: true, force: true });
    kubelet.revive(pod); // started again on an empty directory, as a pod whose volume was wiped
  };
  /** The client URLs of the members whose processes run now: where a load's clients go. */
  const runningMembers = () => bed.runningClientUrls();
  const everyKeyOnEveryMember = async () => {
    for (const pod of pods) expect({ pod, keys: await countOrders(cluster.addressOf(pod).clientUrl) }).toEqual({ pod, keys: KEYS });
  };
  /** Remove -> promoted, from the monitor's readings: the first reading one voter short, the first after it with all 5 voting. */
  const replacementWindow = (readings: readonly Reading[], from: number) => {
    const removed = readings.find((r) => r.at >= from && r.voters === SIZE - 1);
    const promoted = removed && readings.find((r) => r.at > removed.at && r.voters === SIZE && r.learners === 0);
    return removed && promoted ? promoted.at - removed.at : undefined;
  };

  beforeAll(async () => {
    bed = await EtcdTestBed.start({ config, name: NAME, label: 'healing', maxMembers: SIZE, keepDirectory: Boolean(process.env.DKV_TEST_KEEP_DIR) });
    ({ client, namespace, dir, cluster, kubelet } = bed);
    await createCluster(client, namespace, NAME, { size: SIZE, image: 'registry.k8s.io/etcd:3.6.8-0' });
    await settled(120_000);
    await writeOrders(cluster.addressOf('kv-0').clientUrl, KEYS);
  }, 240_000 + LATER_BINARIES_BUILD_MS);

  // Kept on request (DKV_TEST_KEEP_DIR): each member's etcd log is there.
  afterAll(async () => {
    await bed?.stop();
  });

  it('does not replace a member that restarts within the configured time', async () => {
    const monitor = new InvariantMonitor(membership());
    monitor.start();
    const before = (await membership().status()).members.map((m) => m.id).sort();
    await kubelet.crash('kv-1');
    // No object the controller watches changes when a process dies (kwok keeps the pod Ready): its periodic look
    // (every 30 s) would see it. A touch of the cluster's metadata makes it look now.
    await client.request('PATCH', clusterPath(namespace, NAME), { body: { metadata: { annotations: { 'test/look': `${Date.now()}` } } }, contentType: 'application/merge-patch+json' });
    // Seen unhealthy, with its clock in status, and waited for.
    const waiting = await eventually('kv-1 reported unhealthy and waited for', async () => {
      const cr = await status();
      const healing = cr.status?.conditions?.find((c: any) => c.type === 'Healing');
      const kv1 = cr.status?.members?.find((m: any) => m.name === 'kv-1');
      return healing?.reason === 'MemberUnhealthy' && kv1?.unhealthySince ? { healing, kv1 } : undefined;
    }, 20_000, 100);
    expect(waiting.healing.message).toMatch(new RegExp(`kv-1 unhealthy since \\S+Z .*replaced at \\S+Z \\(after ${UNHEALTHY_SECONDS} s\\) unless it recovers`));
    kubelet.revive('kv-1');
    await settled();
    // Past the configured time since it failed: nothing was replaced.
    await new Promise((r) => setTimeout(r, UNHEALTHY_SECONDS * 1000)); // a measured window, not a wait for a condition
    await monitor.stop();
    expect((await membership().status()).members.map((m) => m.id).sort()).toEqual(before);
    expect(await events('MemberReplacing')).toEqual([]);
    expect((await status()).status.members.every((m: any) => m.healthy && m.unhealthySince === undefined)).toBe(true);
    expect(monitor.violations).toEqual([]);
  }, 120_000);

  it('replaces a member whose data directory was wiped: removed, added back empty as a learner, promoted; every key intact, at most one member down', async () => {
    const monitor = new InvariantMonitor(membership());
    monitor.start();
    const load = new HistoryRecorder(runningMembers);
    load.start();
    const started = Date.now();
    const old = (await membership().status()).members.find((m) => m.name === 'kv-2')!;
    const claimBefore = (await client.request('GET', claimPath('kv-2'))).metadata.uid;
    await wipe('kv-2');
    await eventually('kv-2 replaced', async () => ((await events('MemberReplaced')).some((m) => m.startsWith('kv-2 replaced')) ? true : undefined), 150_000, 200);
    const after = await settled();
    await monitor.stop();
    await expectLinearizable('the replacement of a wiped member of 5', load, cluster.addressOf('kv-0').clientUrl);
    const replaced = after.members.find((m) => m.name === 'kv-2')!;
    expect(replaced.id).not.toBe(old.id);
    expect((await client.request('GET', claimPath('kv-2'))).metadata.uid).not.toBe(claimBefore);
    expect((await events('MemberReplacing')).filter((m) => m.startsWith('replacing kv-2'))).toEqual([expect.stringMatching(new RegExp(`replacing kv-2 \\(member ${old.id}\\): unhealthy for \\d+ s`))]);
    const changes = await events('MembershipChanged');
    expect(changes.filter((m) => m.startsWith('removed kv-2'))).toHaveLength(1);
    await everyKeyOnEveryMember();
    expect(monitor.violations).toEqual([]);
    expect(monitor.maxDown()).toBeLessThanOrEqual(1);
    const windowMs = replacementWindow(monitor.readings, started);
    expect(windowMs).toBeDefined();
    console.log(`member replacement (wiped data directory, 5 members): remove -> promoted in ${(windowMs! / 1000).toFixed(1)} s, `
      + `failure -> settled in ${((Date.now() - started) / 1000).toFixed(1)} s (of which ${UNHEALTHY_SECONDS} s the configured wait); `
      + `${monitor.readings.length} readings, at most ${monitor.maxDown()} voting member(s) down, 0 quorum losses`);
  }, 200_000);

  it('replaces a member whose claim is deleted while it still serves, without waiting for the timeout', async () => {
    const monitor = new InvariantMonitor(membership());
    monitor.start();
    const started = Date.now();
    const old = (await membership().status()).members.find((m) => m.name === 'kv-3')!;
    await client.request('DELETE', claimPath('kv-3'));
    await eventually('kv-3 replaced', async () => ((await events('MemberReplaced')).some((m) => m.startsWith('kv-3 replaced')) ? true : undefined), 120_000, 200);
    const after = await settled();
    await monitor.stop();
    expect(after.members.find((m) => m.name === 'kv-3')!.id).not.toBe(old.id);
    expect((await events('MemberReplacing')).filter((m) => m.startsWith('replacing kv-3'))).toEqual([expect.stringMatching(/its claim data-kv-3 is being deleted/)]);
    await everyKeyOnEveryMember();
    expect(monitor.violations).toEqual([]);
    console.log(`member replacement (claim deleted): failure -> settled in ${((Date.now() - started) / 1000).toFixed(1)} s; at most ${monitor.maxDown()} voting member(s) down`);
  }, 150_000);

  // Both dead members leave before either is added back (etcd adds none while a voter is down), so kv-1 joins a
  // membership of 4: the member ConfigMap lists exactly those 4 then (etcd refused to start it, "member count is
  // unequal", while it listed all 5). The engine's steps are unit-tested in test/engines/replacement.test.ts.
  it('replaces two failed members of five with one membership change at a time and never two learners, keeping the quorum throughout', async () => {
    const monitor = new InvariantMonitor(membership());
    monitor.start();
    const replacingBefore = (await events('MemberReplacing')).length;
    // Two followers (kv-1 and kv-4 unless one leads): by raft's rules a wiped leader's failure need not last. Its successor starts
    // with no idea how far it had got and, while etcd still holds the whole raft log (the first 10,000 entries),
    // sends it all: it comes back with its data, under its own id, and nothing is to be replaced.
    const leader = (await membership().status()).members.find((m) => m.leader)?.name;
    const [first, second] = ['kv-1', 'kv-4', 'kv-3', 'kv-2', 'kv-0'].filter((p) => p !== leader);
    const replacedBefore = await events('MemberReplaced');
    await Promise.all([wipe(first), wipe(second)]);
    await eventually(`${first} and ${second} replaced`, async () => {
      const done = (await events('MemberReplaced')).filter((m) => !replacedBefore.includes(m));
      return done.some((m) => m.startsWith(`${first} replaced`)) && done.some((m) => m.startsWith(`${second} replaced`)) ? true : undefined;
    }, 200_000, 200);
    await settled();
    await monitor.stop();
    // The test took two members down; the controller never took a third, never removed one while a learner was added.
    // etcd adds a member only while every voter is connected, so both dead members left before either came back:
    // 3 healthy voters of 3, then one learner at a time.
    const readings = monitor.readings;
    expect(readings.every((r) => r.quorum)).toBe(true);
    expect(readings.every((r) => r.learners <= 1)).toBe(true);
    expect(Math.min(...readings.map((r) => r.voters))).toBe(SIZE - 2);
    expect(readings.filter((r) => r.voters === SIZE - 2).every((r) => r.down === 0)).toBe(true);
    expect(monitor.violations.filter((v) => !/^2 voting members down/.test(v))).toEqual([]);
    expect((await events('MemberReplacing')).length - replacingBefore).toBe(2);
    await everyKeyOnEveryMember();
  }, 280_000);
  it('replaces a member whose database etcd\'s own corruption check finds different from the others (CORRUPT), and disarms the alarm it leaves', async () => {
    const monitor = new InvariantMonitor(membership());
    monitor.start();
    const load = new HistoryRecorder(runningMembers);
    load.start();
    const started = Date.now();
    // A follower: the leader compares the others' hashes with its own (a corrupt leader would find every other member different).
    const victim = (await membership().status()).members.find((m) => !m.leader && !m.learner && m.name)!;
    // The pod may have been replaced in an earlier scenario: only a MemberReplaced Event after now is this one's.
    const replacedBefore = (await events('MemberReplaced')).length;
    const pod = victim.name;
    const replacingBefore = await events('MemberReplacing');
    const db = join(await dataDirectory(pod), 'etcd', 'member', 'snap', 'db');
    await kubelet.crash(pod);
    // Every value `order N` becomes `ORDER N` in place: the bbolt file stays readable (its data pages carry no checksum), its keys' hash differs.
    const bytes = readFileSync(db);
    let changed = 0;
    for (let at = bytes.indexOf('order '); at >= 0; at = bytes.indexOf('order ', at + 1), changed++) bytes.write('ORDER ', at);
    expect(changed).toBeGreaterThanOrEqual(KEYS);
    writeFileSync(db, bytes);
    kubelet.revive(pod);
    // The members run exactly their generated arguments: the corruption check is the generator's.
    expect((await client.request('GET', `/api/v1/namespaces/${namespace}/pods/${pod}`)).spec.containers[0].args).toContain(`--corrupt-check-time=${CORRUPTION_CHECK_SECONDS}s`);
    const raised = await eventually(`CORRUPT raised for ${pod}`, async () => {
      const s = await membership().status().catch(() => undefined);
      return s?.members.find((m) => m.id === victim.id)?.alarms.includes('CORRUPT') ? Date.now() : undefined;
    }, 60_000, 200);
    await look();
    await eventually(`${pod} replaced`, async () => ((await events('MemberReplaced')).length > replacedBefore ? true : undefined), 120_000, 200);
    const after = await settled();
    await monitor.stop();
    await expectLinearizable('a CORRUPT member\'s replacement', load, cluster.addressOf(after.members.find((m) => m.leader)!.name).clientUrl);
    expect(after.members.find((m) => m.name === pod)!.id).not.toBe(victim.id);
    // Judged on the members' own hashes: the four others agree, the corrupted one differs.
    expect((await events('MemberReplacing')).filter((m) => !replacingBefore.includes(m))).toEqual([
      expect.stringMatching(new RegExp(`^replacing ${pod} \\(member ${victim.id}\\): a CORRUPT alarm, and its hash at revision \\d+ differs from the one 4 of 5 voting members agree on$`)),
    ]);
    expect(after.alarms).toEqual([]);
    await everyKeyOnEveryMember();
    expect(monitor.violations).toEqual([]);
    expect(monitor.maxDown()).toBeLessThanOrEqual(1);
    console.log(`member replacement (CORRUPT from etcd's check every ${CORRUPTION_CHECK_SECONDS} s): corrupted -> alarm in ${((raised - started) / 1000).toFixed(1)} s, `
      + `alarm -> settled in ${((Date.now() - raised) / 1000).toFixed(1)} s; at most ${monitor.maxDown()} voting member(s) down, 0 quorum losses`);
  }, 200_000);

  // Last: it takes a node away from the tests after it.
  it('replaces a member whose pod cannot be scheduled again because the node holding its local volume is gone', async () => {
    const monitor = new InvariantMonitor(membership());
    monitor.start();
    const started = Date.now();
    const live = ((await client.request('GET', `/api/v1/namespaces/${namespace}/pods`)).items as any[]).filter((p) => pods.includes(p.metadata.name) && !p.metadata.deletionTimestamp);
    const onNode = (node: string) => live.filter((p) => p.spec.nodeName === node).length;
    // A node holding exactly one member: losing it takes one member down, not two.
    const lone = live.find((p) => p.spec.nodeName && onNode(p.spec.nodeName) === 1);
    expect(lone).toBeDefined();
    const pod = lone.metadata.name as string;
    const node = lone.spec.nodeName as string;
    const old = (await membership().status()).members.find((m) => m.name === pod)!;
    const earlier = await events('MemberReplacing');
    const replacedBefore = (await events('MemberReplaced')).length;
    const claim = await client.request('GET', claimPath(pod));
    // A local volume: kwok's provisioner gives its volumes no node affinity (any node could mount them, and the pod
    // would simply be scheduled elsewhere with its data); a local provisioner pins each to its node, as done here.
    await client.request('PATCH', `/api/v1/persistentvolumes/${claim.spec.volumeName}`, {
      body: { spec: { nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [node] }] }] } } } },
      contentType: 'application/merge-patch+json',
    });
    await kubelet.crash(pod); // the node's processes go with it
    await client.request('DELETE', `/api/v1/nodes/${node}`);
    // The pod garbage collector deletes the pods of a node that no longer exists (after its 40 s quarantine); done at once here.
    await client.request('DELETE', `/api/v1/namespaces/${namespace}/pods/${pod}`, { body: { gracePeriodSeconds: 0 } });
    const stuck = await eventually(`${pod} unschedulable`, async () => {
      const p = await client.request('GET', `/api/v1/namespaces/${namespace}/pods/${pod}`).catch(() => undefined);
      const scheduled = p?.metadata.uid !== lone.metadata.uid ? p?.status?.conditions?.find((c: any) => c.type === 'PodScheduled') : undefined;
      return scheduled?.reason === 'Unschedulable' ? scheduled.message as string : undefined;
    }, 30_000, 200);
    expect(stuck).toMatch(/volume node affinity conflict|didn't match PersistentVolume's node affinity/);
    await eventually(`${pod} replaced`, async () => ((await events('MemberReplaced')).length > replacedBefore ? true : undefined), 120_000, 200);
    const after = await settled();
    await monitor.stop();
    expect(after.members.find((m) => m.name === pod)!.id).not.toBe(old.id);
    // This pod may have been replaced before, in an earlier scenario: only the Events since are this one's (each names its member id).
    expect((await events('MemberReplacing')).filter((m) => m.startsWith(`replacing ${pod}`) && !earlier.includes(m))).toEqual([expect.stringMatching(/its pod cannot be scheduled: no node can reach its volume/)]);
    const now = await client.request('GET', `/api/v1/namespaces/${namespace}/pods/${pod}`);
    expect(now.spec.nodeName).not.toBe(node);
    await everyKeyOnEveryMember();
    expect(monitor.violations).toEqual([]);
    expect(monitor.maxDown()).toBeLessThanOrEqual(1);
    console.log(`member replacement (node of a local volume gone): failure -> settled in ${((Date.now() - started) / 1000).toFixed(1)} s; at most ${monitor.maxDown()} voting member(s) down`);
  }, 200_000);
});
