/**
 * `npm run demo:node`: the demo of `npm run demo` on a real node (issue 33),
 * with nothing played: a kubelet with containerd and runc runs every pod.
 *
 *   1. a control plane that admits pods as a real one does (the ServiceAccount
 *      admission, projected tokens, RBAC), kube-controller-manager and
 *      kube-scheduler, and one real node in a network namespace of its own,
 *      with CoreDNS, kube-proxy and a local-volume provisioner
 *      (test/cluster/: built from the Go module proxy, reused from cache);
 *   2. the install bundle `dkv install --finalizer-policy` generates, applied
 *      with kubectl: its Deployment runs the controller as pods of the
 *      project's image (assembled from the Dockerfile's files,
 *      test/cluster/dkv-image.ts) under the bundle's ServiceAccount, which
 *      reach the API server through the `kubernetes` Service with their
 *      projected token, authorized by the bundle's RBAC alone;
 *   3. the example specs applied with kubectl; every member a real etcd
 *      container, Ready through its real probes, found by its DNS name;
 *   4. an out-of-band `kubectl scale` of a StatefulSet, undone by the
 *      controller pod, with the Event that names who changed it;
 *   5. `kubectl delete` of every cluster: its objects and its members' pods go.
 *
 * What differs from the examples, said as it happens: each member's CPU
 * request is lowered to what this node has (the examples ask 500m a member,
 * 4.5 CPUs for nine; this node has the machine's cores); and the clusters
 * with backups are deleted with `dkv.example.com/skip-final-backup` (no S3
 * store runs here for their final backup, and `sessions`' own backupImage is
 * not an image this node has).
 *
 *   --quiet   no live table redraws (for a log or a test): the final tables only
 *
 * Needs root and what test/cluster/README.md "Real node" lists; where
 * something is missing it says what, and exits 2.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parseAllDocuments, stringify } from 'yaml';
import { loadDefaultConfig } from '../api/config.js';
import { CRD_NAME } from '../api/crd.js';
import { packageRoot } from '../api/package-root.js';
import { validateDistributedKV, type ValidResource } from '../api/validate.js';
import { KubeClient, resourcePath } from '../kube/client.js';
import { generatedSelector } from '../reconciler/core/controller.js';
import { locateBinaries } from '../test/cluster/binaries.js';
import { exitDescription, freePort, launch, startControlPlane, terminate } from '../test/cluster/control-plane.js';
import { startControllers, type Controllers } from '../test/cluster/controllers.js';
import { dkvImageSpec } from '../test/cluster/dkv-image.js';
import { startLocalVolumes, type LocalVolumes } from '../test/cluster/local-volumes.js';
import { assembleImageInBackground, buildRealNodeParts, realNodeBlockers, startRealNode, type RealNode } from '../test/cluster/real-node.js';
import { untilEstablished } from '../test/support/crds.js';
import { eventually } from '../test/support/eventually.js';
import { backupTools } from '../test/support/s3-server.js';
import { untilAdmitted } from '../test/support/until-admitted.js';
import { demoOutput, kubectlFor, scaleUndone, untilConverged, untilDeleted } from './demo-steps.js';
import { memberCpuRequest, parseCpu } from './demo-node-resources.js';

const { values } = parseArgs({ options: { quiet: { type: 'boolean', default: false } } });
const output = demoOutput(values.quiet);
const { say, elapsed } = output;
const root = packageRoot();

const blockers = realNodeBlockers();
if (blockers.length > 0) {
  process.stderr.write(`demo:node: this machine cannot run a node; it lacks: ${blockers.join('; ')}\n`);
  process.exit(2);
}

const config = loadDefaultConfig();
const ETCD_IMAGE = 'registry.k8s.io/etcd:3.6.8-0';
const examples = readdirSync(join(root, 'examples')).filter((f) => f.endsWith('.yaml')).map((f) => join(root, 'examples', f));
const clusters: ValidResource[] = examples.flatMap((file) => parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS()))
  .map((doc) => validateDistributedKV(doc, config)).flatMap((r) => (r.valid ? [r.resource] : []));
const namespaces = [...new Set(clusters.map((c) => c.metadata.namespace!))];
const storageClasses = [...new Set(clusters.map((c) => c.spec.storage?.storageClassName).filter((c): c is string => Boolean(c)))];
for (const c of clusters) {
  // The etcd image is assembled from the etcd the control plane's build made: only that release exists here.
  if (c.spec.image !== ETCD_IMAGE) throw new Error(`examples: ${c.metadata.namespace}/${c.metadata.name} runs ${c.spec.image}; this node has ${ETCD_IMAGE} only`);
}

say('building (first run) or finding the node\'s parts and the control plane\'s');
const nodeBin = await buildRealNodeParts();
const binDir = locateBinaries();
const dir = mkdtempSync(join(tmpdir(), 'dkv-demo-node-'));
execFileSync(process.execPath, [join(root, 'bin', 'dkv.js'), 'install', '--out', dir, '--finalizer-policy'], { stdio: ['ignore', 'pipe', 'inherit'] });
const bundleFile = join(dir, 'dkv-install.k8s.yaml');
const bundle = parseAllDocuments(readFileSync(bundleFile, 'utf8')).map((d) => d.toJS()).filter(Boolean);
const deployment = bundle.find((o) => o.kind === 'Deployment');
const controllerImage: string = deployment.spec.template.spec.containers[0].image;
// The images, assembled while the control plane and the node start (in the background: the node's kubelet reaches the API server through this process).
const archives = Promise.all([
  assembleImageInBackground(join(dir, 'etcd.tar'), {
    name: ETCD_IMAGE, files: [`${join(binDir, 'etcd')}:/usr/local/bin/etcd`], env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'], cmd: ['/usr/local/bin/etcd'],
  }),
  assembleImageInBackground(join(dir, 'dkv.tar'), dkvImageSpec({ name: controllerImage, root, etcdutl: join(backupTools(), 'etcdutl'), scratch: join(dir, 'dkv-image') })),
]);
archives.catch(() => undefined); // awaited below

say('a control plane with ServiceAccount admission and RBAC, kube-controller-manager, kube-scheduler, and one real node (kubelet, containerd, runc, CoreDNS, kube-proxy)');
const plane = await startControlPlane(binDir, { inClusterClients: true });
const admin = KubeClient.fromKubeconfig(plane.kubeconfigPath);
const kubectl = kubectlFor(binDir, plane.kubeconfigPath, dir);
const show = kubectl.show;
let controllers: Controllers | undefined;
let node: RealNode | undefined;
const volumes: LocalVolumes[] = [];
try {
  controllers = await startControllers({ binDir, dir: plane.dir, kubeconfigPath: plane.kubeconfigPath, tools: { launch, terminate, exitDescription, freePort } });
  node = await startRealNode(plane, nodeBin, { podNetwork: true, clusterDomain: config.clusterDomain, serviceProxy: true });
  for (const archive of await archives) await node.importImage(archive);
  // The default class, and each one an example names, provisioned as local volumes on the node.
  for (const storageClass of ['dkv-local', ...storageClasses]) {
    volumes.push(await startLocalVolumes(admin, { nodeName: node.name, dir: join(node.dir, 'volumes', storageClass), storageClass, isDefault: storageClass === 'dkv-local' }));
  }
  process.stdout.write(`node ${node.name}: everything it writes in ${node.dir}, its cgroups under /${node.name}, its network in namespace ${node.name}\n`);
  show(['get', 'nodes', '-o', 'wide']);

  say(`dkv install: the generated bundle, applied with kubectl; its Deployment runs the controller from ${controllerImage} (assembled here, imported into containerd)`);
  process.stdout.write(kubectl('apply', '--server-side', '-f', bundleFile));
  await untilEstablished(admin, CRD_NAME);
  const namespace: string = deployment.metadata.namespace;
  await eventually('the controller\'s pods to be Ready (their /readyz probe)', async () => {
    const d = await admin.request('GET', resourcePath('apps/v1', 'Deployment', namespace, deployment.metadata.name));
    return d.status?.readyReplicas === d.spec.replicas && d.status?.updatedReplicas === d.spec.replicas ? true : undefined;
  }, 180_000, 500);
  show(['get', 'pods', '-n', namespace, '-o', 'custom-columns=POD:.metadata.name,NODE:.spec.nodeName,IP:.status.podIP,SERVICEACCOUNT:.spec.serviceAccountName,READY:.status.containerStatuses[0].ready']);
  // What the kubelet gave the controller's container: the `kubernetes` Service's address (kube-proxy routes it to the API server) and the projected token.
  const controllerPod = (await admin.request('GET', `/api/v1/namespaces/${namespace}/pods`)).items[0];
  const pid = node.containerPid(controllerPod.status.containerStatuses[0].containerID);
  const environ = Object.fromEntries(readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
  const token = readFileSync(`/proc/${pid}/root/var/run/secrets/kubernetes.io/serviceaccount/token`, 'utf8');
  const subject = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).sub;
  process.stdout.write(`${controllerPod.metadata.name} reaches the API server in-cluster: https://${environ.KUBERNETES_SERVICE_HOST}:${environ.KUBERNETES_SERVICE_PORT} (the kubernetes Service), as ${subject} (its projected token)\n`);
  const serviceAccount = `system:serviceaccount:${namespace}:${deployment.spec.template.spec.serviceAccountName}`;
  process.stdout.write(`the bundle's RBAC for ${serviceAccount}: update DistributedKV status ${kubectl('auth', 'can-i', 'update', 'distributedkvs.example.com/status', '-A', '--as', serviceAccount).trim()}, `
    + `patch StatefulSets ${kubectl('auth', 'can-i', 'patch', 'statefulsets', '-A', '--as', serviceAccount).trim()}, `
    + `delete Nodes ${tryKubectl('auth', 'can-i', 'delete', 'nodes', '--as', serviceAccount)}\n`);

  // This node has the machine's cores: the members' CPU requests must fit it (with room for the scale step's two extra members).
  const allocatable = parseCpu((await admin.request('GET', `/api/v1/nodes/${node.name}`)).status.allocatable.cpu);
  const controllerRequests = deployment.spec.replicas * parseCpu(deployment.spec.template.spec.containers[0].resources?.requests?.cpu ?? '0');
  const members = clusters.reduce((sum, c) => sum + c.spec.size, 0) + 2;
  const perMember = memberCpuRequest({ allocatableMillis: allocatable, reservedMillis: controllerRequests, members });
  const specs = clusters.map((c) => {
    // A spec's resources replace the configuration's whole: a spec without them gets the configuration's, its CPU request lowered.
    const resources = c.spec.resources ?? config.members.resources;
    const cpu = `${Math.min(parseCpu(resources.requests?.cpu ?? '0'), perMember)}m`;
    return { ...c, spec: { ...c.spec, resources: { ...resources, requests: { ...resources.requests, cpu } } } };
  });
  const specsFile = join(dir, 'examples.yaml');
  writeFileSync(specsFile, specs.map((s) => stringify(s)).join('---\n'));
  say(`kubectl apply: examples/ (${clusters.map((c) => `${c.metadata.namespace}/${c.metadata.name} (${c.spec.size})`).join(', ')}); this node has ${allocatable}m CPU, so each member requests ${perMember}m (the examples ask up to 500m)`);
  for (const ns of namespaces) kubectl('create', 'namespace', ns);
  await untilAdmitted(kubectl, [specsFile]);
  process.stdout.write(kubectl('apply', '-f', specsFile));
  try {
    await untilConverged(admin, kubectl, output, clusters.length, 420_000, 1000);
  } catch (e) {
    show(['get', 'distributedkvs,pods', '-A', '-o', 'wide']);
    show(['get', 'events', '-A', '--field-selector', 'type=Warning', '-o', 'custom-columns=OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message']);
    throw e;
  }
  show(['get', 'pods', '-n', namespaces[0], '-o', 'custom-columns=POD:.metadata.name,IP:.status.podIP,READY:.status.containerStatuses[0].ready,RESTARTS:.status.containerStatuses[0].restartCount']);

  await scaleUndone(admin, kubectl, output, clusters, 120_000);

  const withBackups = clusters.filter((c) => c.spec.backup);
  say(`kubectl delete distributedkv --all (${withBackups.map((c) => c.metadata.name).join(', ')} without a final backup: no S3 store runs here): everything each generated goes with it, and its members' pods`);
  for (const c of withBackups) kubectl('annotate', 'distributedkv', c.metadata.name, '-n', c.metadata.namespace!, `${config.backup.final.skipAnnotation}=true`);
  show(['delete', 'distributedkv', '--all', '-A', '--wait=false']);
  await untilDeleted(admin, kubectl, generatedSelector(config), 180_000, async () => {
    const pods = await Promise.all(namespaces.map((n) => admin.request('GET', `/api/v1/namespaces/${n}/pods`)));
    return pods.every((list) => list.items.length === 0);
  });
  for (const n of namespaces) show(['get', 'pods', '-n', n]);
  process.stdout.write('the members\' volume claims stay (the StatefulSets\' whenDeleted: Retain: data is never deleted with a cluster), bound to their local volumes:\n');
  show(['get', 'persistentvolumeclaims', '-A', '-o', 'custom-columns=NAMESPACE:.metadata.namespace,CLAIM:.metadata.name,STATUS:.status.phase,CLASS:.spec.storageClassName']);
  say(`done on a real node: ${clusters.length} clusters converged as real etcd containers, drift undone by the controller pod, all deleted, in ${elapsed()}`);
} finally {
  for (const v of volumes) await v.stop();
  await node?.stop();
  await controllers?.stop();
  admin.close();
  await plane.stop();
  await archives.catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}

/** `kubectl auth can-i` exits 1 for "no": its answer either way. */
function tryKubectl(...args: string[]): string {
  try {
    return kubectl(...args).trim();
  } catch (e) {
    return String((e as { stdout?: string }).stdout ?? '').trim() || 'error';
  }
}
