// Slow: real members scale 3 -> 5 -> 3, then 3 -> 4 -> 3 twice, each time under a fault (about 3 minutes).
/**
 * Day-2 changes under faults, on real etcd members run from their pods'
 * generated arguments (the test bed: the API server, kube-controller-manager,
 * kwok's nodes, test/support/etcd-kubelet.ts), with 8 clients recording a
 * history that porcupine checks, under the invariant monitor. Each fault
 * hits while the controller scales out and back in (3 -> 5 -> 3 for the
 * kills, which want every step; 3 -> 4 -> 3, a learner added, promoted and
 * removed, for the others):
 *
 * - the controller killed at every step boundary: after each write it makes
 *   (a StatefulSet, a claim, status, an Event), its client is fenced (every
 *   request after it refused, those in flight cut off) and a new controller,
 *   with nothing in memory, takes over;
 * - a member paused (SIGSTOP) for longer than the controller's status timeout
 *   while a learner joins: a stalled disk, a long GC pause;
 * - the API server stopped and started again in the middle.
 *
 * Nothing the controller does may turn a fault into a loss: never two voting
 * members down, never two membership changes at once, the history
 * linearizable with no acknowledged write lost, and the cluster settles
 * where the spec says, its voters' claims the same ones.
 */
import { loadDefaultConfig } from '../../api/config.js';
import { resourcePath, type KubeClient } from '../../kube/client.js';
import { describeWithCluster, eventually } from '../cluster/kube.js';
import { LATER_BINARIES_BUILD_MS } from '../cluster/binaries.js';
import { issuedClientTls, trustClient } from '../support/etcd-members.js';
import { EtcdTestBed } from '../support/etcd-test-bed.js';
import type { InvariantMonitor } from '../support/invariant-monitor.js';
import { expectLinearizable, HistoryRecorder } from '../support/linearizability.js';
import { clusterPath } from './controller-harness.js';

const config = loadDefaultConfig();
const NAME = 'kv';
const mergePatch = 'application/merge-patch+json';
/** Bounds the killing: past it the controller runs on, so the test ends however many writes a scale takes. */
const MAX_KILLS = 60;

describeWithCluster('Day-2 changes under faults: scaling out and in on real members', () => {
  let bed: EtcdTestBed;
  let client: KubeClient;
  let namespace: string;
  let monitor: InvariantMonitor | undefined;
  let history: HistoryRecorder | undefined;
  const status = () => client.request('GET', clusterPath(namespace, NAME));
  const running = () => bed.runningClientUrls();
  const settledAt = (size: number) => bed.settledAt(size, 150_000);
  /** As soon as a learner exists: the change under way when the fault hits. */
  const learnerJoining = () => eventually('a learner joining', async () => ((await status()).status?.members ?? []).some((m: any) => m.role === 'learner') || undefined, 60_000, 100);
  /** The uid of each voter's claim: a claim replaced is a member's data thrown away. */
  const claimUids = async (pods: readonly string[]) => Object.fromEntries(await Promise.all(pods.map(async (p) =>
    [p, (await client.request('GET', resourcePath('v1', 'PersistentVolumeClaim', namespace, `data-${p}`))).metadata.uid] as const)));
  const scale = (size: number) => client.request('PATCH', clusterPath(namespace, NAME), { body: { spec: { size } }, contentType: mergePatch });

  beforeAll(async () => {
    bed = await EtcdTestBed.start({ config, name: NAME, label: 'day2-faults', maxMembers: 5 });
    ({ client, namespace } = bed);
    await client.request('POST', clusterPath(namespace), {
      body: { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: NAME, namespace }, spec: { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0' } },
    });
    await settledAt(3);
    // TLS on by default: the tests' clients use the identity the controller issued.
    trustClient(bed.pods.map((p) => bed.cluster.addressOf(p).clientUrl), await issuedClientTls(client, namespace, NAME));
  }, 240_000 + LATER_BINARIES_BUILD_MS);

  afterAll(async () => {
    await history?.stop(bed.cluster.addressOf('kv-0').clientUrl).catch(() => undefined);
    await monitor?.stop();
    await bed?.stop();
  });

  /** Scales 3 -> `peak` -> 3 under `fault` with the load and the monitor on, and holds the outcome to the invariants. */
  async function scaleUnder(fault: string, peak: number, during: { whileGrowing?: () => Promise<void>; kubeletErrorsExpected?: RegExp } = {}) {
    const kubeletErrorsBefore = bed.kubelet.errors.length;
    const before = await claimUids(['kv-0', 'kv-1', 'kv-2']);
    monitor = bed.monitor();
    monitor.start();
    history = new HistoryRecorder(running);
    history.start();
    await scale(peak);
    await during.whileGrowing?.();
    await settledAt(peak);
    await scale(3);
    const settled = await settledAt(3);
    await monitor.stop();
    const checked = await expectLinearizable(`scaling 3 -> ${peak} -> 3 with ${fault}`, history, bed.cluster.addressOf('kv-0').clientUrl);
    history = undefined;
    expect(monitor.violations).toEqual([]);
    expect(monitor.maxDown()).toBeLessThanOrEqual(1);
    expect(settled.status.members.map((m: any) => m.name).sort()).toEqual(['kv-0', 'kv-1', 'kv-2']);
    expect(await claimUids(['kv-0', 'kv-1', 'kv-2'])).toEqual(before);
    expect(bed.kubelet.errors.slice(kubeletErrorsBefore).filter((e) => !during.kubeletErrorsExpected?.test(e))).toEqual([]);
    return { checked, monitor };
  }

  it('the controller killed at every step boundary: each write it makes is its last, and a new controller with nothing in memory takes over', async () => {
    await bed.controller!.stop();
    let fence = new AbortController();
    const kills: string[] = [];
    let replacing: Promise<void> | undefined;
    let killing = true;
    /** One kill at a time: a controller is killed only once the one before it was replaced. */
    let swapping = false;
    const killable = (signal: AbortSignal): KubeClient => {
      const fenced = bed.controllerClient.fenced(signal);
      return Object.create(fenced, {
        request: {
          value: async <T>(method: string, path: string, options?: object): Promise<T> => {
            const answer = await fenced.request<T>(method, path, options);
            if (method !== 'GET' && !signal.aborted && killing && !swapping && kills.length < MAX_KILLS) {
              swapping = true;
              kills.push(`${method} ${path.replace(`/namespaces/${namespace}`, '')}`);
              fence.abort(); // every later request of this controller is refused, those in flight cut off
              const old = bed.controller!;
              replacing = (async () => {
                await old.stop();
                fence = new AbortController();
                await bed.startController(undefined, killable(fence.signal));
                swapping = false;
              })();
            }
            return answer;
          },
        },
      }) as KubeClient;
    };
    await bed.startController(undefined, killable(fence.signal));
    try {
      const { checked } = await scaleUnder('the controller killed after each of its writes', 5);
      console.log(`controller killed ${kills.length} times while scaling 3 -> 5 -> 3 (${new Date().toISOString()}), after: ${[...new Set(kills)].join(', ')}; ${checked.operations} operations checked`);
      expect(kills.length).toBeGreaterThanOrEqual(10); // the scaling's every step: StatefulSet, status and Events, each a boundary
      expect(kills.some((k) => k.includes('/statefulsets/'))).toBe(true);
    } finally {
      killing = false; // the controller now running runs on for the next tests
      await replacing;
    }
  }, 300_000);

  it('a voting member paused (SIGSTOP) for 6 s, longer than the status timeout, while the learner joins', async () => {
    let paused: string | undefined;
    const { monitor: seen } = await scaleUnder('a voting member paused for 6 s', 4, {
      whileGrowing: async () => {
        await learnerJoining();
        const leader = (await bed.membership().status()).members.find((m) => m.leader)?.name;
        paused = ['kv-1', 'kv-2', 'kv-0'].find((p) => p !== leader)!;
        bed.cluster.signal(paused, 'SIGSTOP');
        await new Promise((r) => setTimeout(r, 6_000));
        bed.cluster.signal(paused, 'SIGCONT');
      },
    });
    // The pause was seen: a voter down, and only that one.
    expect(seen.maxDown()).toBe(1);
    console.log(`scaling with ${paused} paused for 6 s: ${seen.readings.length} monitor readings, at most ${seen.maxDown()} member(s) down`);
  }, 300_000);

  it('the API server stopped for 5 s and started again while the cluster grows', async () => {
    await scaleUnder('the API server restarted', 4, {
      whileGrowing: async () => {
        await learnerJoining();
        await bed.plane.stopApiServer();
        await new Promise((r) => setTimeout(r, 5_000));
        await bed.plane.startApiServer();
      },
      // The test's kubelet could not reach the API server meanwhile, as a real one would not.
      kubeletErrorsExpected: /ECONNREFUSED|ECONNRESET|socket hang up|timed out|apiserver is shutting down/,
    });
  }, 300_000);
});
