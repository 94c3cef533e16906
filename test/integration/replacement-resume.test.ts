/**
 * A controller killed at every step of a member replacement, on real
 * components (API server, kube-controller-manager, kwok nodes) and real etcd
 * members (test/support/etcd-kubelet.ts runs each scheduled pod's member).
 *
 * A member's data directory is wiped; the replacement it earns takes several
 * writes (the claim marked with the decision, the member removed, a learner
 * added, the claim and the pod deleted, the learner promoted). Every time the
 * world shows that one more of them has landed, the controller is stopped
 * and a new one started, which knows only what it reads. What must hold:
 * the wiped member is removed once and added once (no second removal, no
 * second learner), the cluster returns to full size with every key, and the
 * invariant monitor sees no lost quorum and at most one member down.
 *
 * The unit test (test/engines/replacement.test.ts) covers every state a
 * killed controller can leave; this proves the same on the real writes.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadDefaultConfig } from '../../api/config.js';
import { resourcePath } from '../../kube/client.js';
import { LATER_BINARIES_BUILD_MS } from '../cluster/binaries.js';
import { describeWithCluster, eventually } from '../cluster/kube.js';
import { countOrders, writeOrders } from '../support/etcd-members.js';
import { EtcdTestBed } from '../support/etcd-test-bed.js';
import { clusterPath, createCluster } from './controller-harness.js';

const defaults = loadDefaultConfig();
// Replaced after 4 s unhealthy (600 by default), so the scenario runs within the test's time.
const config = { ...defaults, healing: { ...defaults.healing, unhealthySeconds: 4 } };
const NAME = 'kv';
const SIZE = 3;
const KEYS = 500;
const WIPED = 'kv-1';

describeWithCluster('a controller killed at every step of a member replacement', () => {
  let bed: EtcdTestBed;
  const membership = () => bed.membership();
  const claimPath = (pod: string) => resourcePath('v1', 'PersistentVolumeClaim', bed.namespace, `data-${pod}`);
  const podPath = (pod: string) => resourcePath('v1', 'Pod', bed.namespace, pod);
  const orUndefined = <T>(p: Promise<T>) => p.catch(() => undefined);

  beforeAll(async () => {
    bed = await EtcdTestBed.start({ config, name: NAME, label: 'resume', maxMembers: SIZE });
    await createCluster(bed.client, bed.namespace, NAME, { size: SIZE, image: 'registry.k8s.io/etcd:3.6.8-0' });
    await eventually('3 healthy voting members', async () => {
      const s = await membership().status().catch(() => undefined);
      return s && s.members.length === SIZE && s.members.every((m) => m.healthy && !m.learner) ? s : undefined;
    }, 120_000, 200);
    await writeOrders(bed.cluster.addressOf('kv-0').clientUrl, KEYS);
  }, 240_000 + LATER_BINARIES_BUILD_MS);

  afterAll(async () => {
    await bed?.stop();
  });

  it('resumes from what it reads after each step and removes the wiped member once', async () => {
    const before = await membership().status();
    const wipedId = before.members.find((m) => m.name === WIPED)!.id;
    const { client, cluster, kubelet, dir, namespace } = bed;
    const [claim, pod] = [await client.request('GET', claimPath(WIPED)), await client.request('GET', podPath(WIPED))];
    const monitor = bed.monitor();
    monitor.start();

    // The member's data is gone: its process stops and starts again on an empty directory.
    await kubelet.crash(WIPED);
    rmSync(join(dir, `${WIPED}-${claim.metadata.uid}`), { recursive: true, force: true });
    kubelet.revive(WIPED);
    // Nothing the controller watches changes when a process dies: a touch of the cluster makes it look now.
    await client.request('PATCH', clusterPath(namespace, NAME), { body: { metadata: { annotations: { 'test/look': `${Date.now()}` } } }, contentType: 'application/merge-patch+json' });

    /** Which of the replacement's writes the world shows, in order; each one seen once. */
    /** Members that joined during the scenario: a learner, then a voter once promoted. */
    const added = new Set<string>();
    const stepsSeen: string[] = [];
    const observe = async (): Promise<string[]> => {
      const steps: string[] = [];
      const liveClaim = await orUndefined(client.request('GET', claimPath(WIPED)));
      if (liveClaim?.metadata.annotations?.[config.healing.replacementAnnotation] !== undefined || liveClaim?.metadata.uid !== claim.metadata.uid) steps.push('claim marked');
      const s = await orUndefined(membership().status());
      for (const m of s?.members ?? []) if (!before.members.some((b) => b.id === m.id)) added.add(m.id);
      if (s && !s.members.some((m) => m.id === wipedId)) steps.push('member removed');
      if (added.size > 0) steps.push('learner added');
      if (liveClaim && liveClaim.metadata.uid !== claim.metadata.uid) steps.push('claim replaced');
      const livePod = await orUndefined(client.request('GET', podPath(WIPED)));
      if (livePod && livePod.metadata.uid !== pod.metadata.uid) steps.push('pod replaced');
      if (s && added.size > 0 && s.members.length === SIZE && s.members.every((m) => !m.learner && m.healthy)) steps.push('promoted');
      return steps;
    };
    const restarts: string[] = [];
    const deadline = Date.now() + 150_000;
    while (!stepsSeen.includes('promoted')) {
      if (Date.now() > deadline) throw new Error(`the replacement did not finish: steps seen ${stepsSeen.join(', ') || 'none'}`);
      const fresh = (await observe()).filter((step) => !stepsSeen.includes(step));
      if (fresh.length > 0) {
        stepsSeen.push(...fresh);
        if (!fresh.includes('promoted')) {
          // Killed right after the step landed: the next controller knows only what it reads.
          await bed.controller?.stop();
          await bed.startController();
          restarts.push(fresh.join(' + '));
        }
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    await monitor.stop();

    const after = await membership().status();
    // Removed once and added once: one member joined in the whole scenario, and it is the wiped member's name now.
    expect(after.members.some((m) => m.id === wipedId)).toBe(false);
    expect(added.size).toBe(1);
    expect(after.members.find((m) => m.name === WIPED)?.id).toBe([...added][0]);
    expect(after.members.filter((m) => m.id !== [...added][0]).map((m) => m.id).sort()).toEqual(before.members.filter((m) => m.id !== wipedId).map((m) => m.id).sort());
    for (const p of bed.pods) expect({ pod: p, keys: await countOrders(cluster.addressOf(p).clientUrl) }).toEqual({ pod: p, keys: KEYS });
    // Every step was seen, and the controller was killed after most of them (two may land between two looks).
    expect(stepsSeen).toEqual(expect.arrayContaining(['claim marked', 'member removed', 'learner added', 'claim replaced', 'pod replaced', 'promoted']));
    expect(restarts.length).toBeGreaterThanOrEqual(3);
    expect(monitor.violations).toEqual([]);
    expect(monitor.maxDown()).toBeLessThanOrEqual(1);
    console.log(`replacement resumed across ${restarts.length} controller restarts (after: ${restarts.join('; ')}); 1 member removed, 1 added`);
  }, 200_000);
});
