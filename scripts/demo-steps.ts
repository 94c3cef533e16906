/**
 * The steps both demos show the same way, whoever runs the pods: kwok and a
 * test-side kubelet (scripts/demo.ts) or a real node (scripts/demo-node.ts).
 * The clusters converging in a `kubectl get distributedkv` table, an
 * out-of-band `kubectl scale` undone by the controller with its Event, and
 * a deletion waited for until nothing generated is left.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { KIND, type ValidResource } from '../api/validate.js';
import { resourcePath, type KubeClient } from '../kube/client.js';
import { eventually } from '../test/support/eventually.js';

export interface DemoOutput {
  /** Whether the table redraws in place (a terminal, not --quiet). */
  readonly live: boolean;
  /** A bold heading with the time since the demo started. */
  say(line: string): void;
  elapsed(): string;
}

export function demoOutput(quiet: boolean): DemoOutput {
  const started = performance.now();
  const elapsed = () => `${((performance.now() - started) / 1000).toFixed(1)} s`;
  return {
    live: !quiet && Boolean(process.stdout.isTTY),
    elapsed,
    say: (line) => process.stdout.write(`\n\x1b[1m== ${line}\x1b[0m  (${elapsed()})\n`),
  };
}

export interface Kubectl {
  /** Runs kubectl; its stdout (throws on a non-zero exit). */
  (...args: string[]): string;
  /** Prints the command line and its output, as a terminal would show it. */
  show(args: string[]): void;
}

/** The release's kubectl against `kubeconfigPath`, with its discovery cache in `dir` (each run's plane has a new port, which would leave a cache behind in ~/.kube/cache). */
export function kubectlFor(binDir: string, kubeconfigPath: string, dir: string): Kubectl {
  const kubectl = ((...args: string[]): string => execFileSync(join(binDir, 'kubectl'), ['--cache-dir', join(dir, 'kubectl-cache'), ...args], {
    encoding: 'utf8', env: { ...process.env, KUBECONFIG: kubeconfigPath }, stdio: ['ignore', 'pipe', 'pipe'],
  })) as Kubectl;
  kubectl.show = (args) => process.stdout.write(`$ kubectl ${args.join(' ')}\n${kubectl(...args) || 'No resources found.\n'}`);
  return kubectl;
}

/** Until every cluster is Available with all its members ready, redrawing `kubectl get distributedkv -A` when live; the table at the end when not. */
export async function untilConverged(admin: KubeClient, kubectl: Kubectl, output: DemoOutput, clusters: number, deadlineMs: number, intervalMs: number): Promise<void> {
  const table = () => kubectl('get', 'distributedkv', '-A');
  let last = '';
  await eventually('every cluster Available with all members ready', async () => {
    const now = table();
    if (output.live && now !== last) process.stdout.write(`\x1b[${last ? last.split('\n').length - 1 : 0}A\x1b[J${now}`);
    last = now;
    const crs = (await admin.request('GET', '/apis/example.com/v1beta1/distributedkvs')).items as any[];
    const done = crs.length === clusters && crs.every((cr) => cr.status?.readyReplicas === cr.spec.size
      && cr.status?.conditions?.some((c: any) => c.type === 'Available' && c.status === 'True'));
    return done ? true : undefined;
  }, deadlineMs, intervalMs);
  if (!output.live) process.stdout.write(table());
}

/** Scales the largest cluster's StatefulSet by hand by two, waits until the controller has undone it and the StatefulSet settled, and shows it with the cluster's Events. */
export async function scaleUndone(admin: KubeClient, kubectl: Kubectl, output: DemoOutput, clusters: readonly ValidResource[], deadlineMs: number): Promise<void> {
  const [target] = [...clusters].sort((a, b) => b.spec.size - a.spec.size);
  const { name } = target.metadata;
  const namespace = target.metadata.namespace!;
  output.say(`someone scales StatefulSet ${namespace}/${name} by hand: kubectl scale --replicas=${target.spec.size + 2}`);
  kubectl.show(['scale', 'statefulset', name, '-n', namespace, `--replicas=${target.spec.size + 2}`]);
  await eventually('the controller to undo it', async () => {
    const sts = await admin.request('GET', resourcePath('apps/v1', 'StatefulSet', namespace, name));
    const settled = sts.status?.observedGeneration === sts.metadata.generation && sts.status?.replicas === target.spec.size && sts.status?.readyReplicas === target.spec.size;
    return sts.spec.replicas === target.spec.size && settled ? true : undefined;
  }, deadlineMs, 200);
  kubectl.show(['get', 'statefulset', name, '-n', namespace]);
  kubectl.show(['get', 'events', '-n', namespace, '--field-selector', `involvedObject.kind=${KIND},involvedObject.name=${name}`, '-o', 'custom-columns=REASON:.reason,MESSAGE:.message']);
}

/**
 * Until no DistributedKV is left, no object labelled `selector` of the kinds
 * a cluster generates, and `alsoGone` (if given) says true; on a timeout,
 * shows what is left before throwing.
 */
export async function untilDeleted(admin: KubeClient, kubectl: Kubectl, selector: string, deadlineMs: number, alsoGone?: () => Promise<boolean>): Promise<void> {
  try {
    await eventually('the clusters and every object they generated to be gone', async () => {
      const left = JSON.parse(kubectl('get', 'distributedkvs,statefulsets,services,poddisruptionbudgets,networkpolicies,configmaps,cronjobs', '-A', '-l', selector, '-o', 'json')).items;
      const clustersLeft = (await admin.request('GET', '/apis/example.com/v1beta1/distributedkvs')).items;
      return left.length === 0 && clustersLeft.length === 0 && (!alsoGone || await alsoGone()) ? true : undefined;
    }, deadlineMs, 500);
  } catch (e) {
    kubectl.show(['get', 'distributedkvs,jobs,pods', '-A', '-o', 'wide']);
    kubectl.show(['get', 'events', '-A', '--field-selector', `involvedObject.kind=${KIND}`, '-o', 'custom-columns=NAME:.involvedObject.name,REASON:.reason,MESSAGE:.message']);
    throw e;
  }
  kubectl.show(['get', 'statefulsets,services,poddisruptionbudgets,networkpolicies,cronjobs', '-A', '-l', selector]);
}
