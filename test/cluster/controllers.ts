/**
 * kube-controller-manager and kube-scheduler beside a test control plane:
 * what turns a StatefulSet into scheduled pods, a PVC into a bound volume, a
 * headless Service into EndpointSlices and a deleted owner into collected
 * dependents. Both lanes run them: kwok's fake nodes (nodes.ts) and the real
 * node (real-node.ts), where a kubelet then runs what the scheduler placed.
 *
 * Logs: kube-controller-manager.log and kube-scheduler.log in the control
 * plane's dir (kept with DKV_KEEP_CONTROL_PLANE=1).
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually, yes } from '../support/eventually.js';
import { httpProbe } from '../support/http-probe.js';

/** The process helpers of control-plane.ts, handed in so that children are tracked (and killed on exit) in one place. */
export interface ProcessTools {
  launch(binary: string, args: string[], logFile: string, env?: NodeJS.ProcessEnv): ChildProcess;
  terminate(child: ChildProcess | undefined): Promise<void>;
  exitDescription(child: ChildProcess, logFile: string): string | undefined;
  freePort(): Promise<number>;
}

export interface ControllersContext {
  /** Holds kube-controller-manager and kube-scheduler (test/cluster/build.sh). */
  readonly binDir: string;
  /** The control plane's temp dir (pki/ inside it). */
  readonly dir: string;
  /** The admin kubeconfig: the components' credentials. */
  readonly kubeconfigPath: string;
  readonly tools: ProcessTools;
}

export interface Controllers {
  /** kube-controller-manager, then kube-scheduler. */
  readonly children: readonly ChildProcess[];
  /** The first of them that exited, with its last log lines (for eventually's failure message). */
  anyExited(): string | undefined;
  /** Stops both. Safe to call twice. */
  stop(): Promise<void>;
}

/** Starts both and waits for their /healthz. */
export async function startControllers(ctx: ControllersContext): Promise<Controllers> {
  const { binDir, dir, kubeconfigPath, tools } = ctx;
  const pki = join(dir, 'pki');
  const [kcmPort, schedulerPort] = [await tools.freePort(), await tools.freePort()];

  const kcmLog = join(dir, 'kube-controller-manager.log');
  const kcm = tools.launch(join(binDir, 'kube-controller-manager'), [
    `--kubeconfig=${kubeconfigPath}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${kcmPort}`,
    `--cert-dir=${join(dir, 'kube-controller-manager-certs')}`,
    '--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics',
    `--root-ca-file=${join(pki, 'ca.crt')}`,
    `--service-account-private-key-file=${join(pki, 'sa.key')}`,
    '--use-service-account-credentials=false',
    '--leader-elect=false',
    // Every on-by-default controller: garbage collector, statefulset, job, cronjob, serviceaccount(-token), PV binder, endpointslice, node lifecycle, …
    '--controllers=*',
    // Else it creates /usr/libexec/kubernetes/kubelet-plugins/volume/exec/ on the host.
    `--flex-volume-plugin-dir=${join(dir, 'flexvolume')}`,
    '--kube-api-qps=100',
    '--kube-api-burst=200',
    '--v=1',
  ], kcmLog);

  const schedulerLog = join(dir, 'kube-scheduler.log');
  const schedulerConfig = join(dir, 'kube-scheduler.yaml');
  writeFileSync(schedulerConfig, [
    'apiVersion: kubescheduler.config.k8s.io/v1',
    'kind: KubeSchedulerConfiguration',
    'clientConnection:',
    `  kubeconfig: ${JSON.stringify(kubeconfigPath)}`,
    '  qps: 100',
    '  burst: 200',
    'leaderElection:',
    '  leaderElect: false',
    '',
  ].join('\n'));
  const scheduler = tools.launch(join(binDir, 'kube-scheduler'), [
    `--config=${schedulerConfig}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${schedulerPort}`,
    `--cert-dir=${join(dir, 'kube-scheduler-certs')}`,
    '--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics',
    '--v=1',
  ], schedulerLog);

  const children = [kcm, scheduler];
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    for (const child of [...children].reverse()) await tools.terminate(child);
  };
  const anyExited = () => tools.exitDescription(kcm, kcmLog) ?? tools.exitDescription(scheduler, schedulerLog);
  try {
    await Promise.all([
      eventually('kube-controller-manager to be healthy', async () => yes((await httpProbe(`https://127.0.0.1:${kcmPort}/healthz`, { tls: 'insecure' })).status === 200), 60_000, 100, () => tools.exitDescription(kcm, kcmLog)),
      eventually('kube-scheduler to be healthy', async () => yes((await httpProbe(`https://127.0.0.1:${schedulerPort}/healthz`, { tls: 'insecure' })).status === 200), 60_000, 100, () => tools.exitDescription(scheduler, schedulerLog)),
    ]);
  } catch (e) {
    await stop();
    throw e;
  }
  return { children, anyExited, stop };
}
