/**
 * `kubectl drain` of the nodes that hold members, on real components: the
 * real kubectl (built at the control plane's release) drains two nodes at
 * once through the eviction API, kube-apiserver enforces the generated
 * PodDisruptionBudget, kube-controller-manager's disruption and StatefulSet
 * controllers and kube-scheduler put the members back on the nodes left,
 * and real etcd processes are the members (test/support/etcd-kubelet.ts
 * plays the kubelet: it stops a member when its pod goes, starts the new
 * pod's member on the volume of the same claim, and reports the pod Ready
 * from the member's own /readyz, which is what the budget counts).
 *
 * What a platform team needs from a drain: it never takes a second member
 * while one is away, even from five members that could lose two and keep a
 * quorum (the budget refuses the other drain's eviction until the first
 * member is back), and an evicted member comes back as the same
 * member (same etcd id) with its data. The invariant monitor watches the
 * whole time: never a lost quorum, never two members down.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadDefaultConfig } from '../../api/config.js';
import { customResourceDefinition } from '../../api/crd.js';
import { API_VERSION, KIND } from '../../api/validate.js';
import { EtcdMembership } from '../../engines/etcd/membership.js';
import { KubeClient, resourcePath } from '../../kube/client.js';
import { createLogger } from '../../kube/log.js';
import { Controller } from '../../reconciler/core/controller.js';
import { buildBinaries, LATER_BINARIES_BUILD_MS } from '../cluster/binaries.js';
import { locateBinaries, startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { createNamespace, describeWithCluster, eventually, installCrd } from '../cluster/kube.js';
import { byRole, synth } from '../generator/support.js';
import { EtcdKubelet } from '../support/etcd-kubelet.js';
import { apiServerSecrets, countOrders, LocalEtcdCluster, memberClientTls, writeOrders } from '../support/etcd-members.js';
import { InvariantMonitor } from '../support/invariant-monitor.js';
import { clusterPath } from './controller-harness.js';

const config = loadDefaultConfig(); // the etcd engine
const NAME = 'kv';
const pods = [0, 1, 2, 3, 4].map((i) => `${NAME}-${i}`);
const ORDERS = 300;

describeWithCluster('kubectl drain of the nodes that hold etcd members', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let namespace: string;
  let dir: string;
  let cacheDir: string;
  let kubectlPath: string;
  let cluster: LocalEtcdCluster;
  let kubelet: EtcdKubelet;
  let controller: Controller;
  let monitor: InvariantMonitor;

  const podOf = (name: string) => client.request('GET', resourcePath('v1', 'Pod', namespace, name));
  const kubectlArgs = (...args: string[]) => [`--cache-dir=${cacheDir}`, `--kubeconfig=${plane.kubeconfigPath}`, ...args];
  /** `kubectl drain` running in the background: what it has printed so far, and its end. */
  const startDrain = (node: string) => {
    const child = spawn(kubectlPath, kubectlArgs('drain', node, '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=200s'));
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const done = new Promise<{ code: number | null; output: string }>((resolve) => child.on('close', (code) => resolve({ code, output })));
    return { output: () => output, done };
  };
  /** Every member healthy and voting, as the controller reports it. */
  const allHealthy = () => eventually('5 healthy voting members', async () => {
    const cr = await client.request('GET', clusterPath(namespace, NAME));
    const members = cr.status?.members ?? [];
    return members.length === 5 && members.every((m: any) => m.healthy && m.role !== 'learner') ? cr : undefined;
  }, 120_000, 200);

  beforeAll(async () => {
    kubectlPath = join(await buildBinaries(['kubectl']), 'kubectl');
    // Seven nodes: two drained, and room left on the other five for the members' topology spread (one per node).
    // Readiness from the members themselves, not kwok's: the budget counts Ready pods (test/support/etcd-kubelet.ts).
    plane = await startControlPlane(undefined, { withNodes: { count: 7, withoutStages: ['pod-ready'], crds: [customResourceDefinition(config) as Record<string, any>] } });
    client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
    await installCrd(client);
    namespace = await createNamespace(client, 'drain');
    dir = mkdtempSync(join(tmpdir(), 'dkv-drain-'));
    cacheDir = mkdtempSync(join(tmpdir(), 'dkv-drain-kubectl-'));
    const { statefulSet } = byRole(synth({ name: NAME, namespace, size: 5 }, config));
    cluster = new LocalEtcdCluster(statefulSet, namespace, locateBinaries(['etcd']), dir, async (name) => (await client.request('GET', resourcePath('v1', 'ConfigMap', namespace, name))).data, apiServerSecrets(client, namespace));
    for (const pod of pods) await cluster.address(pod);
    kubelet = new EtcdKubelet(client, namespace, NAME, cluster, undefined, { readiness: 'probe' });
    kubelet.start();
    controller = new Controller({
      client: KubeClient.fromKubeconfig(plane.kubeconfigPath), config, log: createLogger(process.env.DKV_TEST_LOG_LEVEL ?? 'silent'), namespace, workers: 2,
      backoff: { baseMs: 200, maxMs: 2000 },
      memberAddresses: { client: (_ns, pod) => cluster.addressOf(pod).clientUrl, peer: (_ns, pod) => cluster.addressOf(pod).peerUrl },
      memberTimeoutMs: 1000,
    });
    await controller.startCaches();
    await controller.startWorkers();
    monitor = new InvariantMonitor(new EtcdMembership(() => pods, (pod) => cluster.addressOf(pod).clientUrl, 1000, undefined, memberClientTls(cluster)));
  }, 180_000 + LATER_BINARIES_BUILD_MS);

  afterAll(async () => {
    await monitor?.stop();
    await controller?.stop();
    await kubelet?.stop();
    client?.close();
    await plane?.stop();
    for (const d of [dir, cacheDir]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it('drains two nodes at once one member at a time, and each evicted member comes back as itself with its data', async () => {
    await client.request('POST', `/apis/example.com/v1beta1/namespaces/${namespace}/distributedkvs`, {
      body: { apiVersion: API_VERSION, kind: KIND, metadata: { name: NAME, namespace }, spec: { size: 5, image: 'registry.k8s.io/etcd:3.6.8-0' } },
    });
    await allHealthy();
    await writeOrders(cluster.addressOf(pods[4]).clientUrl, ORDERS);
    // The disruption controller has read the budget: one member may go.
    await eventually('the budget to allow one disruption', async () =>
      ((await client.request('GET', resourcePath('policy/v1', 'PodDisruptionBudget', namespace, NAME))).status?.disruptionsAllowed === 1 ? true : undefined), 60_000, 200);
    const membership = new EtcdMembership(() => pods, (pod) => cluster.addressOf(pod).clientUrl, 1000, undefined, memberClientTls(cluster));
    const ids = new Map((await membership.status()).members.map((m) => [m.name, m.id]));
    const [first, second] = [await podOf(pods[0]), await podOf(pods[1])];
    const drained = [first.spec.nodeName as string, second.spec.nodeName as string];
    expect(drained[0]).not.toBe(drained[1]); // the topology spread put each member on a node of its own

    monitor.start();
    // Two operators drain two nodes at the same moment, as a node-pool upgrade does. The evicted
    // member's new pod is held back (a slow image pull) until the other drain has met the budget:
    // without the hold, a drain that starts late on a loaded machine can find the first member
    // already back (seen in CI), and the budget would be proven by luck instead of by its refusal.
    kubelet.hold(pods.slice(0, 2));
    const drains = drained.map(startDrain);
    await eventually('one drain refused by the disruption budget while the other member is away', async () =>
      (drains.some((d) => /disruption budget/.test(d.output())) ? true : undefined), 120_000, 200);
    kubelet.release();
    const ends = await Promise.all(drains.map((d) => d.done));
    await allHealthy();
    await monitor.stop();

    // Both drains finished: the refused one retried once the first member was back.
    expect(ends.map((e) => e.code)).toEqual([0, 0]);
    expect(ends.map((e) => e.output).join('\n')).toMatch(/Cannot evict pod as it would violate the pod's disruption budget/);
    for (const [i, pod] of pods.slice(0, 2).entries()) {
      const now = await podOf(pod);
      expect(now.metadata.uid).not.toBe([first, second][i].metadata.uid); // a new pod...
      expect(drained).not.toContain(now.spec.nodeName); // ...on a node left...
    }
    // ...is the same etcd member (same id, never removed and added), serving every key it had.
    expect(new Map((await membership.status()).members.map((m) => [m.name, m.id]))).toEqual(ids);
    for (const pod of pods) expect(await countOrders(cluster.addressOf(pod).clientUrl)).toBe(ORDERS);

    expect(monitor.violations).toEqual([]);
    expect(monitor.maxDown()).toBe(1); // each member was really away, one at a time
    expect(kubelet.errors).toEqual([]);
    console.log(`node drain: 2 nodes drained at once in ${monitor.readings.length} readings; at most ${monitor.maxDown()} member(s) down`);
  }, 360_000);
});
