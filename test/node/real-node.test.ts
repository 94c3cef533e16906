/**
 * A real node (issue 33, first step): containerd and a kubelet of the control
 * plane's release run a pod from an image assembled here, as kwok never does:
 * the image's files, the pod's user, a read-only root, a volume owned through
 * fsGroup, and readiness decided by a probe that really runs.
 *
 * Part of `npm test` wherever a node can run (real-node-lane.ts: elsewhere one
 * loud line names what is missing, and under CI=true that is a failure). The
 * first build of the node's parts takes 6.5-17 minutes on 2 cores (.ci/run
 * builds them in a step of their own); see test/cluster/README.md "Real node".
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { KubeClient } from '../../kube/client.js';
import { locateBinaries } from '../cluster/binaries.js';
import { freePort, startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { assembleImage, buildRealNodeParts, POD_SUBNET, REAL_NODE_BUILD_MS, startRealNode, type RealNode } from '../cluster/real-node.js';
import { eventually, yes } from '../support/eventually.js';
import { httpProbe } from '../support/http-probe.js';
import { realNodeLane } from './real-node-lane.js';

const describeOnNode = realNodeLane('real node');

/** The versions the build pins: what the node must report. */
const pinned = (goMod: string, module: string): string => {
  const line = readFileSync(new URL(goMod, import.meta.url), 'utf8').split('\n').find((l) => l.trim().startsWith(`${module} v`));
  if (!line) throw new Error(`${module} not in ${goMod}`);
  return line.trim().split(/\s+/)[1];
};
const KUBERNETES = pinned('../cluster/go.mod', 'k8s.io/kubernetes');
const CONTAINERD = pinned('../cluster/node/go.mod', 'github.com/containerd/containerd/v2');
const ETCD_IMAGE = 'registry.k8s.io/etcd:3.6.8-0';
const ETCD_USER = 65532;

const ready = (pod: any): boolean => pod?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True') ?? false;
const running = (pod: any): boolean => Boolean(pod?.status?.containerStatuses?.[0]?.state?.running);

/** etcd as the generated members run it (command `etcd`, the StatefulSet's security context), on ports of its own: the pod shares the host's network. */
function etcdPod(name: string, nodeName: string, address: string, ports: { client: number; peer: number; metrics: number }, readyzPath = '/readyz'): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      nodeName,
      hostNetwork: true,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: 5,
      securityContext: { runAsUser: ETCD_USER, runAsGroup: ETCD_USER, runAsNonRoot: true, fsGroup: ETCD_USER, fsGroupChangePolicy: 'OnRootMismatch', seccompProfile: { type: 'RuntimeDefault' } },
      containers: [{
        name: 'kv',
        image: ETCD_IMAGE,
        imagePullPolicy: 'Never',
        command: ['etcd'],
        args: [
          '--name=$(POD_NAME)',
          '--data-dir=/var/lib/dkv/etcd',
          `--listen-client-urls=http://127.0.0.1:${ports.client}`,
          `--advertise-client-urls=http://127.0.0.1:${ports.client}`,
          `--listen-peer-urls=http://127.0.0.1:${ports.peer}`,
          `--initial-advertise-peer-urls=http://127.0.0.1:${ports.peer}`,
          `--initial-cluster=$(POD_NAME)=http://127.0.0.1:${ports.peer}`,
          // The probe connects to the pod's IP: with hostNetwork, the node's address.
          `--listen-metrics-urls=http://${address}:${ports.metrics}`,
        ],
        env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
        ports: [{ name: 'metrics', containerPort: ports.metrics }],
        readinessProbe: { httpGet: { path: readyzPath, port: 'metrics' }, periodSeconds: 1, failureThreshold: 1 },
        securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, readOnlyRootFilesystem: true, runAsNonRoot: true },
        volumeMounts: [{ name: 'data', mountPath: '/var/lib/dkv' }],
      }],
      volumes: [{ name: 'data', emptyDir: {} }],
    },
  };
}

/** A control plane and a real node beside it, with the etcd image imported. */
async function startNode(podNetwork: boolean): Promise<{ plane: ControlPlane; node: RealNode; client: KubeClient }> {
  const binDir = await buildRealNodeParts();
  const plane = await startControlPlane();
  const client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
  let node: RealNode;
  try {
    node = await startRealNode(plane, binDir, { podNetwork });
  } catch (e) {
    client.close();
    await plane.stop();
    throw e;
  }
  console.log(`real node ${node.name}${podNetwork ? ' (own network namespace)' : ''}: Ready ${node.startMillis} ms after containerd was spawned`);
  // The etcd binary the harness builds for the control plane, as the image's /usr/local/bin/etcd.
  const etcd = join(locateBinaries(['etcd']), 'etcd');
  await node.importImage(assembleImage(join(node.dir, 'etcd.tar'), {
    name: ETCD_IMAGE,
    files: [`${etcd}:/usr/local/bin/etcd`],
    env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
    cmd: ['/usr/local/bin/etcd'],
  }));
  return { plane, node, client };
}

describeOnNode('a real node: containerd and a kubelet run etcd from a locally assembled image', () => {
  let plane: ControlPlane;
  let node: RealNode;
  let client: KubeClient;

  beforeAll(async () => {
    ({ plane, node, client } = await startNode(false));
  }, REAL_NODE_BUILD_MS + 180_000);

  afterAll(async () => {
    client?.close();
    await node?.stop();
    await plane?.stop();
  }, 60_000);

  test(`the kubelet registers a Ready node of the control plane's release (${KUBERNETES}) on containerd ${CONTAINERD}`, async () => {
    const n = await client.request('GET', `/api/v1/nodes/${node.name}`);
    expect(n.status.nodeInfo.kubeletVersion).toBe(KUBERNETES);
    expect(n.status.nodeInfo.containerRuntimeVersion).toBe(`containerd://${CONTAINERD.replace(/^v/, '')}`);
    expect(n.status.addresses).toContainEqual({ type: 'InternalIP', address: node.address });
    expect(n.status.conditions.find((c: any) => c.type === 'Ready')?.status).toBe('True');
  });

  test('etcd runs as user 65532 on a read-only root, writes its data volume, and is Ready through its /readyz probe', async () => {
    const ports = { client: await freePort(), peer: await freePort(), metrics: await freePort() };
    await client.request('POST', '/api/v1/namespaces/default/pods', { body: etcdPod('etcd-0', node.name, node.address, ports) });
    const pod = await eventually('etcd-0 to be Ready', async () => {
      const p = await client.request('GET', '/api/v1/namespaces/default/pods/etcd-0');
      return ready(p) ? p : undefined;
    }, 60_000, 250);

    const pid = node.containerPid(pod.status.containerStatuses[0].containerID);
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    expect(status).toMatch(new RegExp(`^Uid:\\s+${ETCD_USER}\\s+${ETCD_USER}\\s+${ETCD_USER}\\s+${ETCD_USER}$`, 'm'));
    expect(status).toMatch(new RegExp(`^Gid:\\s+${ETCD_USER}\\s`, 'm'));
    const rootMount = readFileSync(`/proc/${pid}/mountinfo`, 'utf8').split('\n').map((l) => l.split(' ')).find((f) => f[4] === '/');
    expect(rootMount?.[5].split(',')).toContain('ro');

    // A write through etcd's own API lands on the emptyDir, whose directory fsGroup gave to the pod's group.
    const key = Buffer.from('real-node').toString('base64');
    const put = await fetch(`http://127.0.0.1:${ports.client}/v3/kv/put`, { method: 'POST', body: JSON.stringify({ key, value: Buffer.from('yes').toString('base64') }) });
    expect(put.status).toBe(200);
    const range = await (await fetch(`http://127.0.0.1:${ports.client}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key }) })).json() as any;
    expect(Buffer.from(range.kvs[0].value, 'base64').toString()).toBe('yes');
    const volume = join(node.dir, 'kubelet', 'pods', pod.metadata.uid, 'volumes', 'kubernetes.io~empty-dir', 'data');
    expect(statSync(volume).gid).toBe(ETCD_USER);
    expect(statSync(join(volume, 'etcd', 'member')).uid).toBe(ETCD_USER);
    expect((await httpProbe(`http://${node.address}:${ports.metrics}/readyz`)).body.trim()).toBe('ok');
  }, 90_000);

  test('a running etcd whose readiness probe asks a path it does not serve is never Ready (the probe runs; kwok would say Ready)', async () => {
    const ports = { client: await freePort(), peer: await freePort(), metrics: await freePort() };
    await client.request('POST', '/api/v1/namespaces/default/pods', { body: etcdPod('etcd-unready', node.name, node.address, ports, '/no-such-path') });
    await eventually('etcd-unready to run and serve', async () => {
      const p = await client.request('GET', '/api/v1/namespaces/default/pods/etcd-unready');
      return yes(running(p) && (await httpProbe(`http://${node.address}:${ports.metrics}/readyz`)).status === 200);
    }, 60_000, 250);
    // The kubelet reports each failed probe as an Unhealthy event (repeats counted on one event): three of them, then still not Ready.
    await eventually('three failed readiness probes', async () => {
      const events = await client.request('GET', '/api/v1/namespaces/default/events', { query: { fieldSelector: 'involvedObject.name=etcd-unready' } });
      const failed = (events.items as any[]).filter((e) => e.reason === 'Unhealthy' && /Readiness probe failed: HTTP probe failed with statuscode: 404/.test(e.message));
      return yes(failed.reduce((sum, e) => sum + (e.count ?? 1), 0) >= 3);
    }, 30_000, 250);
    const p = await client.request('GET', '/api/v1/namespaces/default/pods/etcd-unready');
    expect(running(p)).toBe(true);
    expect(ready(p)).toBe(false);
  }, 90_000);
});

describeOnNode('a real node with a pod network: the bridge plugin inside the node\'s own network namespace', () => {
  let plane: ControlPlane;
  let node: RealNode;
  let client: KubeClient;

  beforeAll(async () => {
    ({ plane, node, client } = await startNode(true));
  }, REAL_NODE_BUILD_MS + 180_000);

  afterAll(async () => {
    client?.close();
    await node?.stop();
    await plane?.stop();
  }, 60_000);

  test('etcd on the generated members\' ports gets a pod address, is Ready through its probe, and answers there; no bridge appears on the host', async () => {
    const pod = etcdPod('etcd-0', node.name, node.address, { client: 2379, peer: 2380, metrics: 2381 });
    const container = (pod.spec as any).containers[0];
    (pod.spec as any).hostNetwork = false;
    container.env.push({ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } });
    container.args = [
      '--name=$(POD_NAME)',
      '--data-dir=/var/lib/dkv/etcd',
      '--listen-client-urls=http://0.0.0.0:2379',
      '--listen-peer-urls=http://0.0.0.0:2380',
      '--listen-metrics-urls=http://0.0.0.0:2381',
      '--advertise-client-urls=http://$(POD_IP):2379',
      '--initial-advertise-peer-urls=http://$(POD_IP):2380',
      '--initial-cluster=$(POD_NAME)=http://$(POD_IP):2380',
    ];
    await client.request('POST', '/api/v1/namespaces/default/pods', { body: pod });
    const running = await eventually('etcd-0 to be Ready', async () => {
      const p = await client.request('GET', '/api/v1/namespaces/default/pods/etcd-0');
      return ready(p) ? p : undefined;
    }, 60_000, 250);
    const podIp: string = running.status.podIP;
    expect(podIp.startsWith(POD_SUBNET.replace(/0\/24$/, ''))).toBe(true);
    expect(podIp).not.toBe(node.address);

    const key = Buffer.from('pod-network').toString('base64');
    node.inNetwork('curl', '-sf', '-X', 'POST', `http://${podIp}:2379/v3/kv/put`, '-d', JSON.stringify({ key, value: Buffer.from('yes').toString('base64') }));
    const range = JSON.parse(node.inNetwork('curl', '-sf', '-X', 'POST', `http://${podIp}:2379/v3/kv/range`, '-d', JSON.stringify({ key })));
    expect(Buffer.from(range.kvs[0].value, 'base64').toString()).toBe('yes');

    expect(node.inNetwork('ip', '-o', 'link', 'show', 'dkv-br0')).toContain('dkv-br0');
    expect(spawnSync('ip', ['link', 'show', 'dkv-br0'], { stdio: 'ignore' }).status).not.toBe(0);
  }, 90_000);
});
