/**
 * The optional half of the test control plane: kube-controller-manager,
 * kube-scheduler and kwok with a few fake Nodes, so that what controllers do
 * with our objects really happens — StatefulSet pods are created, scheduled
 * and become Ready, CronJobs start Jobs whose pods succeed, PVCs bind, and
 * the garbage collector deletes what lost its owner. Nothing runs a container:
 * kwok plays each pod's lifecycle through its Stage files (copied from the
 * kwok module by build.sh into <binDir>/kwok-stages/):
 *
 *   Pending ──(scheduled)──▶ Running + Ready ──(owned by a Job)──▶ Succeeded
 *
 * and deletes terminating pods at once (there is no kubelet to wait for).
 * PVCs of the default StorageClass `kwok-volume` get a PV and are Bound.
 *
 * Started by startControlPlane(binDir, { withNodes: true }); the components'
 * logs are kube-controller-manager.log, kube-scheduler.log and kwok.log in the
 * control plane's dir (kept with DKV_KEEP_CONTROL_PLANE=1).
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { KubeApiError, KubeClient } from '../../kube/client.js';
import { establishCrd } from '../support/crds.js';
import { startControllers, type Controllers, type ProcessTools } from './controllers.js';
import { eventually, yes } from '../support/eventually.js';
import { httpProbe } from '../support/http-probe.js';

export interface NodesOptions {
  /** Fake nodes to create (default 3). */
  readonly count?: number;
  /**
   * CustomResourceDefinitions to create (and wait for) before kube-controller-manager
   * starts. Its garbage collector notices new resource types only every 30 s; until
   * then it cannot see an owner of a new kind being deleted, and the dependents'
   * collection waits for that resync plus retry backoff (~30-80 s instead of ~1 s).
   */
  readonly crds?: readonly Record<string, any>[];
  /**
   * kwok Stages to leave out, by name: `pod-complete` for a test whose loop
   * runs Job pods' containers and reports how they ended (kwok would report
   * every Job pod Succeeded at once).
   */
  readonly withoutStages?: readonly string[];
  /**
   * StorageClasses kwok provisions besides its default `kwok-volume` (created
   * non-default, same provisioner): for specs that name a class of their own,
   * as the examples' `fast-ssd`.
   */
  readonly storageClasses?: readonly string[];
}

export interface NodeComponents {
  /** Names of the fake Nodes, all Ready and untainted when startNodeComponents resolves. */
  readonly nodeNames: readonly string[];
  /** Milliseconds from spawning the components to every node being Ready. */
  readonly startMillis: number;
  /** Stops kwok, kube-scheduler and kube-controller-manager. Safe to call twice. */
  stop(): Promise<void>;
}

export interface NodeComponentsContext {
  readonly binDir: string;
  /** The control plane's temp dir (pki/ inside it). */
  readonly dir: string;
  /** The admin kubeconfig: the components' credentials, and ours for creating nodes. */
  readonly kubeconfigPath: string;
  readonly tools: ProcessTools;
}

/** Annotation kwok selects its nodes by (`--manage-nodes-with-annotation-selector`). */
export const FAKE_NODE_ANNOTATION = 'kwok.x-k8s.io/node';
/** Pod IPs kwok hands out: outside the Service range (10.96.0.0/16). */
const POD_CIDR = '10.244.0.0/16';
const NODE_IP = '10.0.0.2';

const REQUIRED = ['kube-controller-manager', 'kube-scheduler', 'kwok', 'kwok-stages'];

/** What `binDir` lacks for the nodes mode (external envtest binaries have none of it). */
export function missingNodeBinaries(binDir: string): string[] {
  return REQUIRED.filter((name) => !existsSync(join(binDir, name)));
}

/** Creates an object; one that already exists is fine (a retried start). */
async function create(client: KubeClient, path: string, object: unknown): Promise<void> {
  await client.request('POST', path, { body: object }).catch((e) => {
    if (!(e instanceof KubeApiError && e.status === 409)) throw e;
  });
}

/** kwok's Stage documents (for --config) and the other objects shipped with them (the `kwok-volume` StorageClass). */
function readStages(binDir: string, without: readonly string[] = [], storageClasses: readonly string[] = []): { stages: string; objects: Record<string, any>[] } {
  const classes = ['kwok-volume', ...storageClasses].map((c) => `'${c}'`).join(', ');
  const stageDir = join(binDir, 'kwok-stages');
  const stages: string[] = [];
  const objects: Record<string, any>[] = [];
  for (const file of readdirSync(stageDir).filter((f) => f.endsWith('.yaml')).sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(stageDir, file), 'utf8'))) {
      const object = doc.toJS();
      if (!object) continue;
      if (object.kind === 'Stage' && without.includes(object.metadata?.name)) continue;
      if (object.kind === 'Stage') stages.push(`# ${file}\n${doc.toString().replaceAll("self.spec.storageClassName == 'kwok-volume'", `self.spec.storageClassName in [${classes}]`)}`);
      else objects.push(object);
      if (object.kind === 'StorageClass') {
        for (const name of storageClasses) {
          objects.push({ ...object, metadata: { ...object.metadata, name, annotations: { ...object.metadata.annotations, 'storageclass.kubernetes.io/is-default-class': 'false' } } });
        }
      }
    }
  }
  if (stages.length === 0) throw new Error(`no kwok Stage documents in ${stageDir}`);
  return { stages: stages.join('---\n'), objects };
}

function fakeNode(name: string): Record<string, unknown> {
  const resources = { cpu: '32', memory: '256Gi', pods: '110' };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { [FAKE_NODE_ANNOTATION]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      // kubernetes.io/hostname is what the StatefulSet's topology spread constraint counts by; a kubelet would set it.
      labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', type: 'kwok' },
    },
    // No taints: nothing needs a toleration. kwok keeps allocatable/capacity as given.
    spec: {},
    status: { allocatable: resources, capacity: resources },
  };
}

const ready = (node: any): boolean => node.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True') ?? false;
/** kube-controller-manager's node lifecycle controller taints a node until it has seen it Ready. */
const schedulable = (node: any): boolean => !(node.spec?.taints ?? []).some((t: any) => t.effect === 'NoSchedule' || t.effect === 'NoExecute') && !node.spec?.unschedulable;

export async function startNodeComponents(ctx: NodeComponentsContext, options: NodesOptions = {}): Promise<NodeComponents> {
  const { binDir, dir, kubeconfigPath, tools } = ctx;
  const started = Date.now();
  const missing = missingNodeBinaries(binDir);
  if (missing.length > 0) throw new Error(`withNodes: ${binDir} lacks ${missing.join(', ')} (test/cluster/build.sh builds them; external KUBEBUILDER_ASSETS do not have them)`);
  const client = KubeClient.fromKubeconfig(kubeconfigPath);
  const count = options.count ?? 3;
  const children: ChildProcess[] = [];
  let stopped = false;
  let controllers: Controllers | undefined;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    // kwok first, so nothing plays pods while the controllers go away.
    for (const child of [...children].reverse()) await tools.terminate(child);
    await controllers?.stop();
  };

  try {
    // The `kwok-volume` StorageClass must exist (as the default) before any PVC is created.
    const { stages, objects } = readStages(binDir, options.withoutStages, options.storageClasses);
    for (const object of objects) {
      if (object.kind !== 'StorageClass') continue; // the stage files' RBAC is for an in-cluster kwok; ours is admin
      await create(client, '/apis/storage.k8s.io/v1/storageclasses', object);
    }

    for (const crd of options.crds ?? []) await establishCrd(client, crd);

    controllers = await startControllers({ binDir, dir, kubeconfigPath, tools });
    const kwokPort = await tools.freePort();

    const kwokLog = join(dir, 'kwok.log');
    const kwokConfig = join(dir, 'kwok-stages.yaml');
    writeFileSync(kwokConfig, stages);
    // kwok also loads $HOME/.kwok/kwok.yaml if it exists: give it a HOME of its own.
    const kwokHome = join(dir, 'kwok-home');
    mkdirSync(kwokHome, { recursive: true });
    const kwok = tools.launch(join(binDir, 'kwok'), [
      `--kubeconfig=${kubeconfigPath}`,
      `--config=${kwokConfig}`,
      '--manage-all-nodes=false',
      `--manage-nodes-with-annotation-selector=${FAKE_NODE_ANNOTATION}=fake`,
      `--cidr=${POD_CIDR}`,
      `--node-ip=${NODE_IP}`,
      // Renew each node's Lease every 10 s, as a kubelet does: without it the only heartbeat is the node
      // status stage's (every ~10 min), and kube-controller-manager marks nodes and their pods NotReady
      // after its 50 s grace period, then Ready again, over and over.
      '--node-lease-duration-seconds=40',
      // Only for /healthz (plain HTTP); nothing else uses kwok's server.
      `--server-address=127.0.0.1:${kwokPort}`,
    ], kwokLog, { ...process.env, HOME: kwokHome });
    children.push(kwok);

    await eventually('kwok to be healthy', async () => yes((await httpProbe(`http://127.0.0.1:${kwokPort}/healthz`)).status === 200), 60_000, 100, () => tools.exitDescription(kwok, kwokLog));

    const nodeNames = Array.from({ length: count }, (_, i) => `kwok-node-${i}`);
    for (const name of nodeNames) await create(client, '/api/v1/nodes', fakeNode(name));
    const anyDead = () => controllers?.anyExited() ?? tools.exitDescription(kwok, kwokLog);
    await eventually(`${count} fake nodes to be Ready and untainted`, async () => {
      const json = await client.request('GET', '/api/v1/nodes', { query: { labelSelector: 'type=kwok' } });
      const good = (json.items as any[]).filter((n) => nodeNames.includes(n.metadata.name) && ready(n) && schedulable(n));
      if (good.length !== count) throw new Error(`${good.length} of ${count} nodes Ready and untainted`);
      return true;
    }, 60_000, 100, anyDead);
    return { nodeNames, startMillis: Date.now() - started, stop };
  } catch (e) {
    await stop();
    throw e;
  } finally {
    client.close();
  }
}
