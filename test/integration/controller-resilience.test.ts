/**
 * The controller under failure: an API server restart in the middle of a
 * burst, and two replicas competing for the Lease.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { packageRoot } from '../../api/package-root.js';
import { KubeClient, resourcePath } from '../../kube/client.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { createNamespace, describeWithCluster, eventually, installCrd, testClient } from '../cluster/kube.js';
import { reportTiming } from '../support/timing-figures.js';
import { clusterPath, converged, createCluster, startController } from './controller-harness.js';

const SPEC = { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0' };
/** StatefulSet, two Services, PodDisruptionBudget, NetworkPolicy and the etcd engine's member ConfigMap. */
const GENERATED = 6;

describeWithCluster('an API server restart while 50 clusters reconcile', () => {
  let plane: ControlPlane;
  let client: KubeClient;

  beforeAll(async () => {
    // A control plane of its own: restarting the shared one would disturb other test files.
    plane = await startControlPlane();
    client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
    await installCrd(client);
  }, 120_000);
  afterAll(async () => {
    client?.close();
    await plane?.stop();
  });

  it('converges every cluster afterwards, with nothing duplicated and nothing lost', async () => {
    const namespace = await createNamespace(client, 'restart');
    const running = await startController(client, namespace, { workers: 4 });
    try {
      const names = Array.from({ length: 50 }, (_, i) => `kv-${i}`);
      await Promise.all(names.slice(0, 25).map((name) => createCluster(client, namespace, name, SPEC)));
      await plane.stopApiServer();
      await plane.startApiServer();
      await Promise.all(names.slice(25).map((name) => createCluster(client, namespace, name, SPEC)));
      for (const name of names) await converged(client, namespace, name, 5, 120_000);

      const count = async (apiVersion: string, kind: string) => (await client.request('GET', resourcePath(apiVersion, kind, namespace))).items.length;
      expect(await count('apps/v1', 'StatefulSet')).toBe(50);
      expect(await count('v1', 'Service')).toBe(100);
      expect(await count('policy/v1', 'PodDisruptionBudget')).toBe(50);
      expect(await count('networking.k8s.io/v1', 'NetworkPolicy')).toBe(50);
      const restarts = (await running.controller.metrics.watchRestarts.get()).values.reduce((sum, v) => sum + v.value, 0);
      expect(restarts).toBeGreaterThan(0); // the watches did see the outage, and recovered
    } finally {
      await running.stop();
    }
  }, 240_000);
});

interface Replica {
  readonly identity: string;
  readonly process: ChildProcess;
  readonly healthPort: Promise<number>;
}

function startReplica(kubeconfig: string, namespace: string, identity: string): Replica {
  const child = spawn(process.execPath, [
    join(packageRoot(), 'bin', 'dkv.js'), 'controller', '--kubeconfig', kubeconfig, '--namespace', namespace, '--identity', identity,
    '--health-addr', '127.0.0.1:0', '--leader-election-namespace', namespace,
    // The shared control plane's CRD converts through no webhook: test/integration/conversion-webhook.test.ts tests it on its own.
    '--webhook-addr', 'off',
    '--lease-duration-ms', '4000', '--renew-deadline-ms', '3000', '--retry-period-ms', '500',
  ], { stdio: ['ignore', 'pipe', 'inherit'] });
  const healthPort = new Promise<number>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      try {
        const entry = JSON.parse(line);
        if (entry.healthPort) resolve(entry.healthPort);
      } catch {
        /* not a log line */
      }
    });
    child.once('exit', (code) => reject(new Error(`replica ${identity} exited with ${code}`)));
  });
  return { identity, process: child, healthPort };
}

async function isLeader(replica: Replica): Promise<boolean> {
  const res = await fetch(`http://127.0.0.1:${await replica.healthPort}/metrics`, { signal: AbortSignal.timeout(2000) });
  return /^dkv_leader 1$/m.test(await res.text());
}

describeWithCluster('two controller replicas', () => {
  let client: KubeClient;
  let namespace: string;
  const replicas: Replica[] = [];

  beforeAll(async () => {
    client = testClient();
    await installCrd(client);
    namespace = await createNamespace(client, 'ha');
  });
  afterAll(async () => {
    for (const r of replicas) r.process.kill('SIGKILL');
    client?.close();
  });

  it('elect one leader; when it dies the other takes over within the lease duration, and never do two reconcile at once', async () => {
    replicas.push(startReplica(process.env.DKV_TEST_KUBECONFIG!, namespace, 'replica-a'), startReplica(process.env.DKV_TEST_KUBECONFIG!, namespace, 'replica-b'));
    const leader = await eventually('one replica to lead', async () => {
      const states = await Promise.all(replicas.map(isLeader));
      return states.filter(Boolean).length === 1 ? replicas[states.indexOf(true)] : undefined;
    }, 30_000);
    const follower = replicas.find((r) => r !== leader)!;

    await createCluster(client, namespace, 'ha', SPEC);
    await converged(client, namespace, 'ha', GENERATED);
    const lease = await client.request('GET', resourcePath('coordination.k8s.io/v1', 'Lease', namespace, 'dkv-controller'));
    expect(lease.spec.holderIdentity).toBe(leader.identity);

    // Sample both replicas while the leader dies without releasing its Lease.
    let bothLeading = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const states = await Promise.all(replicas.map((r) => isLeader(r).catch(() => false)));
        if (states.every(Boolean)) bothLeading++;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const killedAt = Date.now();
    leader.process.kill('SIGKILL');
    await eventually('the follower to take over', async () => ((await isLeader(follower)) ? true : undefined), 20_000);
    const takeoverMs = Date.now() - killedAt;
    sampling = false;
    await sampler;

    expect(bothLeading).toBe(0);
    // It must wait for the dead leader's lease to run out (4 s, less one 500 ms retry of sampling): the mechanism.
    // How soon after that it took over is the machine's load: a figure.
    expect(takeoverMs).toBeGreaterThanOrEqual(3000);
    reportTiming({ what: 'controller: a follower took the Lease over after the leader was SIGKILLed', ms: takeoverMs, boundMs: 4000 + 4 * 500 + 2000, bound: 'lease 4 s + 4 retries of 500 ms + 2 s' });

    // The new leader reconciles: a spec change converges (an image: a size change of an etcd cluster waits for its members, which kwok does not run).
    await client.request('PATCH', clusterPath(namespace, 'ha'), { body: { spec: { image: 'registry.k8s.io/etcd:3.6.9-0' } }, contentType: 'application/merge-patch+json' });
    const cr = await converged(client, namespace, 'ha', GENERATED);
    expect(cr.metadata.generation).toBe(2);
    const sts = await client.request('GET', resourcePath('apps/v1', 'StatefulSet', namespace, 'ha'));
    expect(sts.spec.template.spec.containers[0].image).toBe('registry.k8s.io/etcd:3.6.9-0');
  }, 90_000);

  it('hands the Lease over at once on SIGTERM', async () => {
    const current = await eventually('a leader', async () => {
      const alive = replicas.filter((r) => r.process.exitCode === null && r.process.signalCode === null);
      const states = await Promise.all(alive.map((r) => isLeader(r).catch(() => false)));
      return alive[states.indexOf(true)];
    });
    const next = startReplica(process.env.DKV_TEST_KUBECONFIG!, namespace, 'replica-c');
    replicas.push(next);
    await next.healthPort;
    const leasePath = resourcePath('coordination.k8s.io/v1', 'Lease', namespace, 'dkv-controller');
    const before = (await client.request('GET', leasePath)).spec;
    const stoppedAt = Date.now();
    const exited = new Promise<number | null>((resolve) => current.process.once('exit', (code) => resolve(code)));
    current.process.kill('SIGTERM');
    await eventually('the new replica to lead after the release', async () => ((await isLeader(next)) ? true : undefined), 20_000);
    const lease = await client.request('GET', leasePath);
    expect(lease.spec.holderIdentity).toBe('replica-c');
    // Released, not expired: the new holder acquired the Lease before the old holder's last renewal we read could have
    // run out (any renewal after it only moves that expiry later), whatever the machine's load did to the seconds.
    expect(before.holderIdentity).not.toBe('replica-c');
    expect(Date.parse(lease.spec.acquireTime)).toBeLessThan(Date.parse(before.renewTime) + before.leaseDurationSeconds * 1000);
    reportTiming({ what: 'controller: the Lease released on SIGTERM was taken by the next replica', ms: Date.now() - stoppedAt, boundMs: 3000, bound: 'under the 4 s lease' });
    // Releasing the Lease on shutdown is not losing it: a clean exit, not the lost-leadership code 1.
    expect(await exited).toBe(0);
  }, 60_000);
});
