// Slow: a real node runs the generated 3-member cluster through 7 scenarios, TLS among them (about a minute).
/**
 * The generated objects of a 3-member cluster on a real node (issue 33):
 * what `dkv synth` writes (the member ConfigMap, the StatefulSet with its
 * `recover` init container from the project's image, the Services, the PDB,
 * the NetworkPolicy) applied to a control plane whose kube-controller-manager
 * and kube-scheduler turn them into pods, claims bound to local volumes, and
 * EndpointSlices that CoreDNS serves as the members' names; a kubelet with
 * containerd then runs them. Proven here, where kwok only plays along: the
 * three etcd containers become Ready through their real /readyz probe, find
 * each other by their DNS names and form one cluster, write their data to a
 * volume they can write only through the pod's fsGroup, and a member whose
 * container is killed, or whose pod is deleted, comes back as the same
 * member with the keys it had. Then a cluster with TLS (the default), whose Secrets the controller issues:
 * the kubelet projects them into the members as the pods' group can read,
 * the members join over https by their names and refuse a client without a
 * certificate of the cluster's CA.
 *
 * Runs wherever a real node can (real-node-lane.ts).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadDefaultConfig } from '../../api/config.js';
import { packageRoot } from '../../api/package-root.js';
import { validateDistributedKV } from '../../api/validate.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';
import { customResourceDefinition } from '../../api/crd.js';
import { API_VERSION, KIND } from '../../api/validate.js';
import { KubeClient, resourcePath } from '../../kube/client.js';
import { createLogger } from '../../kube/log.js';
import { Controller } from '../../reconciler/core/controller.js';
import { establishCrd } from '../support/crds.js';
import { locateBinaries } from '../cluster/binaries.js';
import { exitDescription, freePort, launch, startControlPlane, terminate, type ControlPlane } from '../cluster/control-plane.js';
import { startControllers, type Controllers } from '../cluster/controllers.js';
import { dkvImageSpec } from '../cluster/dkv-image.js';
import { startLocalVolumes, type LocalVolumes } from '../cluster/local-volumes.js';
import { assembleImageInBackground, buildRealNodeParts, REAL_NODE_BUILD_MS, startRealNode, type RealNode } from '../cluster/real-node.js';
import { eventually } from '../support/eventually.js';
import { backupTools } from '../support/s3-server.js';
import { realNodeLane } from './real-node-lane.js';

const describeOnNode = realNodeLane('generated cluster on a real node');

const config = loadDefaultConfig();
const NAMESPACE = 'real';
const NAME = 'kv';
const SIZE = 3;
const ETCD_USER = 65532;
const DOMAIN = config.clusterDomain;

const ready = (pod: any): boolean => pod?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True') ?? false;
const b64 = (s: string) => Buffer.from(s).toString('base64');

/** The generated objects of a plain (TLS disabled) 3-member cluster, exactly as dkv synth writes them. */
function generatedObjects(): ReturnType<typeof synthesizeCluster> {
  const result = validateDistributedKV({
    apiVersion: 'example.com/v1beta1',
    kind: 'DistributedKV',
    metadata: { name: NAME, namespace: NAMESPACE },
    spec: { size: SIZE, image: 'registry.k8s.io/etcd:3.6.8-0', tls: { mode: 'disabled' } },
  }, config);
  if (!result.valid) throw new Error(JSON.stringify(result.problems));
  return synthesizeCluster(result.resource, config);
}

describeOnNode('the generated StatefulSet of a 3-member cluster on a real node', () => {
  let plane: ControlPlane;
  let controllers: Controllers;
  let node: RealNode;
  let volumes: LocalVolumes;
  let client: KubeClient;
  const started = Date.now();

  /** etcd's JSON gateway of one member, at its pod address, from inside the node's network. */
  const etcd = (podIp: string, path: string, body: unknown): any =>
    JSON.parse(node.inNetwork('curl', '-sf', '--max-time', '5', '-X', 'POST', `http://${podIp}:2379${path}`, '-d', JSON.stringify(body)));
  const pod = (i: number) => client.request('GET', `/api/v1/namespaces/${NAMESPACE}/pods/${NAME}-${i}`);
  /**
   * The kubelet's and controllers' Warning events in a namespace, but a startup probe refused while etcd
   * opens its listeners (what the startup probe is for), and, before `formedAt` (when all members were
   * first Ready), a readiness probe answered 503: etcd's /readyz until the members have elected a leader,
   * which on a loaded machine can take longer than the first probe (readiness is for exactly that). A
   * failed mount, a container that could not start, or a probe failing on a member once the cluster had
   * formed would be here.
   */
  const warnings = async (namespace: string, formedAt: number): Promise<string[]> => {
    const events = await client.request('GET', `/api/v1/namespaces/${namespace}/events`);
    // Allowed only while the members form (event times have a resolution of a second): a member not ready before it has
    // a leader (503), and kube-scheduler looking at a new pod before its cache shows the claim the StatefulSet controller
    // created first (FailedScheduling, retried as soon as the claim arrives: the pod is scheduled and becomes Ready).
    const whileForming = (e: any) => Date.parse(e.lastTimestamp ?? e.eventTime) <= formedAt + 1000 && (
      (e.reason === 'Unhealthy' && /^Readiness probe failed: HTTP probe failed with statuscode: 503$/.test(e.message))
      || (e.reason === 'FailedScheduling' && /persistentvolumeclaim "data-[a-z0-9-]+" not found/.test(e.message)));
    return (events.items as any[]).filter((e) => e.type === 'Warning' && !(e.reason === 'Unhealthy' && /^Startup probe failed: .*connect: connection refused$/.test(e.message)) && !whileForming(e))
      .map((e) => `${e.involvedObject.kind}/${e.involvedObject.name} ${e.reason}: ${e.message}`);
  };
  const allReady = () => eventually(`${SIZE} members Ready through their /readyz probe`, async () => {
    const pods = await Promise.all(Array.from({ length: SIZE }, (_, i) => pod(i).catch(() => undefined)));
    return pods.every(ready) ? pods : undefined;
  }, 120_000, 500);

  beforeAll(async () => {
    const phases: string[] = [];
    let mark = Date.now();
    const phase = (what: string) => { phases.push(`${what} ${Date.now() - mark} ms`); mark = Date.now(); };
    const binDir = await buildRealNodeParts();
    const controlPlaneBin = locateBinaries(['kube-controller-manager', 'kube-scheduler']);
    phase('parts (cache hits)');
    // Assembled while the control plane and the node start, without blocking: the node's kubelet reaches the API server through this process.
    const images = mkdtempSync(join(tmpdir(), 'dkv-images-'));
    const archives = Promise.all([
      assembleImageInBackground(join(images, 'etcd.tar'), {
        name: 'registry.k8s.io/etcd:3.6.8-0',
        files: [`${join(controlPlaneBin, 'etcd')}:/usr/local/bin/etcd`],
        env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
        cmd: ['/usr/local/bin/etcd'],
      }),
      // The init container's image: dkv.config.yaml's runner image, the project's own.
      assembleImageInBackground(join(images, 'dkv.tar'), dkvImageSpec({
        name: config.backup.runner.image, root: packageRoot(), etcdutl: join(backupTools(), 'etcdutl'), scratch: join(images, 'dkv-image'),
      })),
    ]);
    archives.catch(() => undefined); // awaited below; until then its failure is not unhandled
    try {
      plane = await startControlPlane();
      client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
      controllers = await startControllers({ binDir: controlPlaneBin, dir: plane.dir, kubeconfigPath: plane.kubeconfigPath, tools: { launch, terminate, exitDescription, freePort } });
      phase('control plane with controllers');
      node = await startRealNode(plane, binDir, { podNetwork: true, clusterDomain: DOMAIN });
      phase('node with CoreDNS Ready');
      for (const archive of await archives) await node.importImage(archive);
      phase('images assembled (meanwhile) and imported');
    } finally {
      await archives.catch(() => undefined);
      rmSync(images, { recursive: true, force: true });
    }
    volumes = await startLocalVolumes(client, { nodeName: node.name, dir: join(node.dir, 'volumes') });
    console.log(`real node ${node.name} with controllers, CoreDNS and local volumes, images imported: ${Date.now() - started} ms (${phases.join(', ')})`);
  }, REAL_NODE_BUILD_MS + 300_000);

  afterAll(async () => {
    await volumes?.stop();
    await node?.stop();
    await controllers?.stop();
    client?.close();
    await plane?.stop();
    console.log(`generated cluster on a real node: ${Date.now() - started} ms in all`);
  }, 90_000);

  test('applied, the three members run as 65532 on fsGroup-owned local volumes, are Ready through /readyz, and form one cluster by their DNS names', async () => {
    await client.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } } });
    for (const object of generatedObjects()) await client.apply(object, { fieldManager: 'dkv-test' });
    const t0 = Date.now();
    const pods = await allReady();
    const formedAt = Date.now();
    console.log(`${SIZE} members Ready ${formedAt - t0} ms after the objects were applied`);

    const peerUrls = (etcd(pods[0].status.podIP, '/v3/cluster/member/list', {}).members as any[]).map((m) => ({ name: m.name, peer: m.peerURLs[0] }));
    expect(peerUrls.sort((a, b) => a.name.localeCompare(b.name))).toEqual(
      Array.from({ length: SIZE }, (_, i) => ({ name: `${NAME}-${i}`, peer: `http://${NAME}-${i}.${NAME}-peers:2380` })));
    const status = etcd(pods[1].status.podIP, '/v3/maintenance/status', {});
    expect(Number(status.leader)).toBeGreaterThan(0);
    // Each member's name resolves, through the node's CoreDNS, to that member's pod; the kubelet pointed the pods' resolv.conf there.
    const names = pods.map((p) => `${p.metadata.name}.${NAME}-peers.${NAMESPACE}.svc.${DOMAIN}`);
    const resolve = `const r = new (await import('node:dns')).promises.Resolver(); r.setServers([process.argv[1]]);
      console.log(JSON.stringify(await Promise.all(process.argv.slice(2).map((n) => r.resolve4(n)))));`;
    const answers = JSON.parse(node.inNetwork(process.execPath, '--input-type=module', '-e', resolve, node.address, ...names));
    expect(answers).toEqual(pods.map((p) => [p.status.podIP]));

    for (const [i, p] of pods.entries()) {
      const pid = node.containerPid(p.status.containerStatuses.find((c: any) => c.name === 'kv').containerID);
      expect(readFileSync(`/proc/${pid}/status`, 'utf8')).toMatch(new RegExp(`^Uid:\\s+${ETCD_USER}\\s+${ETCD_USER}\\s`, 'm'));
      const resolvConf = readFileSync(`/proc/${pid}/root/etc/resolv.conf`, 'utf8');
      expect(resolvConf).toMatch(new RegExp(`^nameserver ${node.address.replaceAll('.', '\\.')}$`, 'm'));
      expect(resolvConf).toMatch(new RegExp(`^search ${NAMESPACE}\\.svc\\.${DOMAIN.replaceAll('.', '\\.')} `, 'm'));
      const rootMount = readFileSync(`/proc/${pid}/mountinfo`, 'utf8').split('\n').map((l) => l.split(' ')).find((f) => f[4] === '/');
      expect(rootMount?.[5].split(',')).toContain('ro');
      // The provisioner made the directory root's, 0755; the kubelet gave it to the pod's fsGroup (setgid), and etcd wrote its member dir there.
      const volume = await volumes.directoryOf(NAMESPACE, `data-${NAME}-${i}`);
      expect(statSync(volume).gid).toBe(ETCD_USER);
      expect(statSync(volume).mode & 0o2070).toBe(0o2070);
      expect(statSync(join(volume, 'etcd', 'member')).uid).toBe(ETCD_USER);
    }
    expect(await warnings(NAMESPACE, formedAt)).toEqual([]);
  }, 180_000);

  test('a member whose container is killed comes back as the same member with the keys written before', async () => {
    const before = await allReady();
    const victim = 1;
    const ip = before[victim].status.podIP;
    const memberId = etcd(ip, '/v3/maintenance/status', {}).header.member_id;
    const keys = Array.from({ length: 20 }, (_, i) => `real-node/${i}`);
    for (const key of keys) etcd(before[0].status.podIP, '/v3/kv/put', { key: b64(key), value: b64(`value of ${key}`) });
    // The victim has applied them (a linearizable read through it), so what it reads afterwards is its own disk's.
    expect(etcd(ip, '/v3/kv/range', { key: b64(keys[keys.length - 1]) }).kvs).toHaveLength(1);

    const kv = (p: any) => p.status.containerStatuses.find((c: any) => c.name === 'kv');
    const restarts = kv(before[victim]).restartCount;
    process.kill(node.containerPid(kv(before[victim]).containerID), 'SIGKILL');
    const after = await eventually(`${NAME}-${victim} restarted and Ready`, async () => {
      const p = await pod(victim);
      return kv(p).restartCount > restarts && ready(p) ? p : undefined;
    }, 90_000, 500);
    expect(after.metadata.uid).toBe(before[victim].metadata.uid);

    const afterIp = after.status.podIP;
    expect(etcd(afterIp, '/v3/maintenance/status', {}).header.member_id).toBe(memberId);
    // Serializable: answered from the member's own store, not through the leader.
    for (const key of keys) {
      const range = etcd(afterIp, '/v3/kv/range', { key: b64(key), serializable: true });
      expect(Buffer.from(range.kvs[0].value, 'base64').toString()).toBe(`value of ${key}`);
    }
    const members = etcd(before[0].status.podIP, '/v3/cluster/member/list', {}).members as any[];
    expect(members).toHaveLength(SIZE);
  }, 120_000);

  test('a deleted member pod comes back as a new pod on the same claim: the same member, its keys, found by its name at its new address', async () => {
    const before = await allReady();
    const victim = 2;
    const memberId = etcd(before[victim].status.podIP, '/v3/maintenance/status', {}).header.member_id;
    const volume = await volumes.directoryOf(NAMESPACE, `data-${NAME}-${victim}`);
    etcd(before[0].status.podIP, '/v3/kv/put', { key: b64('real-node/recreated'), value: b64('kept') });
    expect(etcd(before[victim].status.podIP, '/v3/kv/range', { key: b64('real-node/recreated') }).kvs).toHaveLength(1);

    await client.request('DELETE', `/api/v1/namespaces/${NAMESPACE}/pods/${NAME}-${victim}`);
    const after = await eventually(`a new ${NAME}-${victim} Ready`, async () => {
      const p = await pod(victim).catch(() => undefined);
      return p && p.metadata.uid !== before[victim].metadata.uid && ready(p) ? p : undefined;
    }, 120_000, 500);
    expect(await volumes.directoryOf(NAMESPACE, `data-${NAME}-${victim}`)).toBe(volume);
    expect(etcd(after.status.podIP, '/v3/maintenance/status', {}).header.member_id).toBe(memberId);
    const range = etcd(after.status.podIP, '/v3/kv/range', { key: b64('real-node/recreated'), serializable: true });
    expect(Buffer.from(range.kvs[0].value, 'base64').toString()).toBe('kept');
    // Its peers reach it again by its name: a write through the leader is applied on it (a linearizable read through it).
    etcd(before[0].status.podIP, '/v3/kv/put', { key: b64('real-node/after-recreation'), value: b64('yes') });
    expect(etcd(after.status.podIP, '/v3/kv/range', { key: b64('real-node/after-recreation') }).kvs).toHaveLength(1);
  }, 180_000);

  test('with TLS (the default), the controller issues the Secrets, the kubelet projects them readable by the members\' group, and the members form one cluster over https that refuses a client without a certificate', async () => {
    const ns = `${NAMESPACE}-tls`;
    const name = 'tkv';
    await establishCrd(client, customResourceDefinition(config));
    await client.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } });
    // The controller in this process cannot reach the members (they are inside the node's network): its calls to them fail and are retried; what is proven here is what it writes.
    const controller = new Controller({ client, config, log: createLogger(process.env.DKV_TEST_LOG_LEVEL ?? 'silent'), namespace: ns, workers: 2, backoff: { baseMs: 200, maxMs: 5000 }, memberTimeoutMs: 1000 });
    await controller.startCaches();
    await controller.startWorkers();
    const scratch = mkdtempSync(join(tmpdir(), 'dkv-real-tls-'));
    try {
      // Small requests: the plain cluster above still runs on this 2-CPU node.
      const spec = { size: SIZE, image: 'registry.k8s.io/etcd:3.6.8-0', resources: { requests: { cpu: '50m', memory: '64Mi' } } };
      await client.request('POST', resourcePath(API_VERSION, KIND, ns), { body: { apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace: ns }, spec } });
      const t0 = Date.now();
      const pods = await eventually(`${SIZE} TLS members Ready through their /readyz probe`, async () => {
        const list = await Promise.all(Array.from({ length: SIZE }, (_, i) => client.request('GET', `/api/v1/namespaces/${ns}/pods/${name}-${i}`).catch(() => undefined)));
        return list.every(ready) ? list : undefined;
      }, 120_000, 500);
      const formedAt = Date.now();
      console.log(`${SIZE} TLS members Ready ${formedAt - t0} ms after the DistributedKV was created`);

      // The member Secret, projected with the generated defaultMode and the pod's fsGroup: readable by the members' group, by no one else.
      const kvPid = node.containerPid(pods[0].status.containerStatuses.find((c: any) => c.name === 'kv').containerID);
      const key = statSync(`/proc/${kvPid}/root/etc/dkv/tls/member/tls.key`);
      expect([key.gid, key.mode & 0o777]).toEqual([ETCD_USER, 0o440]);

      // The client Secret the controller issued, as a client outside the members presents it.
      const secret = await client.request('GET', `/api/v1/namespaces/${ns}/secrets/${config.tls.clientSecret.replace('{name}', name)}`);
      const tls = join(scratch, 'client');
      mkdirSync(tls);
      for (const file of ['ca.crt', 'tls.crt', 'tls.key']) writeFileSync(join(tls, file), Buffer.from(secret.data[file], 'base64'));
      const host = `${name}-0.${name}-peers.${ns}.svc.${DOMAIN}`;
      const curl = (...args: string[]) => node.inNetwork('curl', '-s', '--max-time', '5', '--cacert', join(tls, 'ca.crt'), '--resolve', `${host}:2379:${pods[0].status.podIP}`, ...args, '-X', 'POST', `https://${host}:2379/v3/cluster/member/list`, '-d', '{}');
      const members = JSON.parse(curl('--cert', join(tls, 'tls.crt'), '--key', join(tls, 'tls.key'))).members as any[];
      expect(members.map((m) => ({ name: m.name, peer: m.peerURLs[0] })).sort((a, b) => a.name.localeCompare(b.name))).toEqual(
        Array.from({ length: SIZE }, (_, i) => ({ name: `${name}-${i}`, peer: `https://${name}-${i}.${name}-peers:2380` })));
      // No certificate: etcd ends the handshake (curl's 35, or 55/56 when TLS 1.3 lets the alert arrive at the first send or receive).
      expect(() => curl()).toThrow(/exit (35|55|56):/);
      expect(await warnings(ns, formedAt)).toEqual([]);
    } finally {
      await controller.stop();
      rmSync(scratch, { recursive: true, force: true });
    }
  }, 180_000);
});
