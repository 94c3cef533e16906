/**
 * `npm run demo`: the whole system, in one terminal, with nothing left
 * running afterwards.
 *
 *   1. a local control plane with simulated nodes (test/cluster/: etcd,
 *      kube-apiserver, kube-controller-manager, kube-scheduler, kwok, and the
 *      real kubectl, all built from the Go module proxy, reused from cache);
 *   2. the install bundle `dkv install --finalizer-policy` generates, applied with kubectl;
 *   3. the controller, with the bundle's service-account token (kwok plays
 *      the bundle's Deployment's pods, which nothing runs here, so the
 *      controller runs in this process instead, with the same identity);
 *   4. the example specs applied with kubectl, once the API server admits
 *      them (an Established CRD is not usable at once); each member runs as a real
 *      etcd process (a test-side loop plays the kubelet), and the clusters
 *      converge in a live `kubectl get distributedkv` table;
 *   5. an out-of-band `kubectl scale` of a StatefulSet, undone by the
 *      controller, with the Event that names who changed it;
 *   6. `kubectl delete` of every cluster, and everything it generated goes.
 *
 *   --quiet   no live table redraws (for a log or a test): the final tables only
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { loadDefaultConfig } from '../api/config.js';
import { CRD_NAME } from '../api/crd.js';
import { packageRoot } from '../api/package-root.js';
import { validateDistributedKV, type ValidResource } from '../api/validate.js';
import { synthesizeCluster } from '../constructs/synthesize.js';
import { KubeClient, resourcePath } from '../kube/client.js';
import { createLogger } from '../kube/log.js';
import { Controller, generatedSelector } from '../reconciler/core/controller.js';
import { locateBinaries, startControlPlane } from '../test/cluster/control-plane.js';
import { serviceAccountToken, withToken } from '../test/support/connections.js';
import { EtcdKubelet } from '../test/support/etcd-kubelet.js';
import { LocalEtcdCluster, type StatefulSetLike } from '../test/support/etcd-members.js';
import { untilEstablished } from '../test/support/crds.js';
import { untilAdmitted } from '../test/support/until-admitted.js';
import { demoOutput, kubectlFor, scaleUndone, untilConverged, untilDeleted } from './demo-steps.js';

const { values } = parseArgs({ options: { quiet: { type: 'boolean', default: false } } });
const output = demoOutput(values.quiet);
const { say, elapsed } = output;
const root = packageRoot();

const config = loadDefaultConfig();
const examples = readdirSync(join(root, 'examples')).filter((f) => f.endsWith('.yaml')).map((f) => join(root, 'examples', f));
const clusters: ValidResource[] = examples.flatMap((file) => parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS()))
  .map((doc) => validateDistributedKV(doc, config)).flatMap((r) => (r.valid ? [r.resource] : []));
const namespaces = [...new Set(clusters.map((c) => c.metadata.namespace!))];
const storageClasses = [...new Set(clusters.map((c) => c.spec.storage?.storageClassName).filter((c): c is string => Boolean(c)))];

say(`starting a control plane with 3 simulated nodes (kwok also provisions ${storageClasses.join(', ') || 'its default class'})`);
const binDir = locateBinaries();
const plane = await startControlPlane(binDir, { withNodes: { storageClasses } });
const dir = mkdtempSync(join(tmpdir(), 'dkv-demo-'));
const admin = KubeClient.fromKubeconfig(plane.kubeconfigPath);
const kubectl = kubectlFor(binDir, plane.kubeconfigPath, dir);
const kubelets: EtcdKubelet[] = [];
let controller: Controller | undefined;
let controllerClient: KubeClient | undefined;
try {
  say('dkv install: the generated bundle (CRD, RBAC, Deployment, ...), applied with kubectl');
  // The plane is Kubernetes 1.36: the bundle as a 1.36 cluster takes it, with the admission policy that adds the final-backup finalizer.
  execFileSync(process.execPath, [join(root, 'bin', 'dkv.js'), 'install', '--out', dir, '--finalizer-policy'], { stdio: ['ignore', 'pipe', 'inherit'] });
  process.stdout.write(kubectl('apply', '--server-side', '-f', join(dir, 'dkv-install.k8s.yaml')));
  await untilEstablished(admin, CRD_NAME);

  say('the controller, as the bundle\'s service account dkv-system/dkv-controller (kwok plays the Deployment\'s pods; the controller runs in this process)');
  controllerClient = withToken(admin, await serviceAccountToken(admin, 'dkv-system', 'dkv-controller'));
  // Every member a real etcd process on loopback; the controller reaches each through this map instead of cluster DNS.
  const members = new Map<string, LocalEtcdCluster>();
  for (const namespace of namespaces) kubectl('create', 'namespace', namespace);
  for (const cluster of clusters) {
    const namespace = cluster.metadata.namespace!;
    const statefulSet = synthesizeCluster(cluster, config).find((o) => o.kind === 'StatefulSet')! as unknown as StatefulSetLike;
    const configMaps = async (name: string) => (await admin.request('GET', resourcePath('v1', 'ConfigMap', namespace, name))).data;
    const local = new LocalEtcdCluster(statefulSet, namespace, binDir, join(dir, namespace), configMaps);
    for (let i = 0; i < 9; i++) await local.address(`${statefulSet.metadata.name}-${i}`);
    members.set(`${namespace}/${statefulSet.metadata.name}`, local);
    const kubelet = new EtcdKubelet(admin, namespace, statefulSet.metadata.name, local);
    kubelet.start();
    kubelets.push(kubelet);
  }
  const member = (namespace: string, pod: string) => members.get(`${namespace}/${pod.replace(/-\d+$/, '')}`)!.addressOf(pod);
  controller = new Controller({
    client: controllerClient, config, log: createLogger(process.env.DKV_LOG_LEVEL ?? 'silent'), workers: 4,
    memberAddresses: { client: (ns, pod) => member(ns, pod).clientUrl, peer: (ns, pod) => member(ns, pod).peerUrl },
    memberTimeoutMs: 1000, backoff: { baseMs: 500, maxMs: 5000 },
  });
  await controller.startCaches();
  await controller.startWorkers();

  say(`kubectl apply -f examples/: ${clusters.map((c) => `${c.metadata.namespace}/${c.metadata.name} (${c.spec.size})`).join(', ')}`);
  // Established is not usable yet: until discovery and the finalizer policy know the kind, a create is refused (see until-admitted.ts).
  await untilAdmitted(kubectl, examples);
  process.stdout.write(kubectl('apply', ...examples.flatMap((f) => ['-f', f])));
  await untilConverged(admin, kubectl, output, clusters.length, 180_000, 500);

  await scaleUndone(admin, kubectl, output, clusters, 60_000);

  say('kubectl delete distributedkv --all: everything each generated goes with it (owner references)');
  kubectl.show(['delete', 'distributedkv', '--all', '-A', '--wait=false']);
  await untilDeleted(admin, kubectl, generatedSelector(config), 120_000);
  say(`done: ${clusters.length} clusters converged, drift undone, all deleted, in ${elapsed()}`);
} finally {
  await controller?.stop();
  for (const kubelet of kubelets) await kubelet.stop();
  controllerClient?.close();
  admin.close();
  await plane.stop();
  rmSync(dir, { recursive: true, force: true });
}
