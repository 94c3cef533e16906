/**
 * A real Kubernetes control plane (etcd + kube-apiserver) on loopback, started
 * the way controller-runtime's envtest starts one: free ports, a temp dir with
 * its own CA, serving and admin client certificates, service-account keys,
 * RBAC authorization, and a kubeconfig for a `system:masters` user.
 *
 * Opt-in (`{ withNodes: true }`): kube-controller-manager, kube-scheduler and
 * kwok with fake Nodes as well, so workloads really run their course (see nodes.ts).
 *
 * Used by jest's global setup, by tests that need a control plane of their own
 * (restarting the API server), and by `npm run cluster` for humans.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, yes } from '../support/eventually.js';
import { httpProbe } from '../support/http-probe.js';
import { buildBinaries, CORE_BINARIES, locateBinaries, NODE_BINARIES } from './binaries.js';
import { startNodeComponents, type NodeComponents, type NodesOptions } from './nodes.js';

export { ControlPlaneUnavailable, locateBinaries } from './binaries.js';

export interface ControlPlane {
  /** Temp dir holding certificates, data, logs and the kubeconfig. */
  readonly dir: string;
  readonly kubeconfigPath: string;
  /** https://127.0.0.1:<port> */
  readonly server: string;
  /** http://127.0.0.1:<port>: the API server's etcd, for tests that check what is stored (its v3 JSON gateway). */
  readonly etcdUrl: string;
  /** Milliseconds from spawning etcd to kube-apiserver answering /readyz (with `withNodes`: to every fake node Ready). */
  readonly startMillis: number;
  /** Stops kube-apiserver only (to test clients that outlive it). */
  stopApiServer(): Promise<void>;
  /** Starts kube-apiserver again after stopApiServer. */
  startApiServer(): Promise<void>;
  /** Stops everything and removes the temp dir. Safe to call twice. */
  stop(): Promise<void>;
  /** kube-controller-manager, kube-scheduler, kwok and the fake Nodes: only with `withNodes`. */
  readonly nodes?: NodeComponents;
}

export interface ControlPlaneOptions {
  /**
   * Also run kube-controller-manager, kube-scheduler and kwok, and create fake
   * Nodes (3 unless `{ count }` says otherwise). Default: etcd + kube-apiserver only.
   */
  readonly withNodes?: boolean | NodesOptions;
  /** More kube-apiserver flags, e.g. `--feature-gates=ShardedListAndWatch=true`. */
  readonly apiServerFlags?: readonly string[];
  /**
   * Pods as API clients, as on a real cluster (the real node's controller pod):
   * the ServiceAccount admission on (pods get their ServiceAccount and a projected
   * token, which the API server signs with the plane's sa.key and RBAC then
   * authorizes), and a Service range whose first address, the `kubernetes`
   * Service's ClusterIP, is the one the serving certificate names (dkv-pki:
   * 10.0.0.1). Default: the admission off (nothing creates `default`
   * ServiceAccounts without kube-controller-manager) and 10.96.0.0/16.
   */
  readonly inClusterClients?: boolean;
}

/** The Service range of a plane with inClusterClients: its first address is the serving certificate's 10.0.0.1. */
export const IN_CLUSTER_SERVICE_RANGE = '10.0.0.0/16';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

const running = new Set<ChildProcess>();
const temporaryDirs = new Set<string>();
let exitHookInstalled = false;

/** Whatever happens to the test process, no etcd or kube-apiserver outlives it, and no temp dir stays behind. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of running) child.kill('SIGKILL');
    if (!process.env.DKV_KEEP_CONTROL_PLANE) for (const dir of temporaryDirs) rmSync(dir, { recursive: true, force: true });
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      for (const child of running) child.kill('SIGKILL');
      process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1));
    });
  }
}

/** Starts a child that is killed with this process, whatever ends it. */
export function launch(binary: string, args: string[], logFile: string, env?: NodeJS.ProcessEnv): ChildProcess {
  installExitHook();
  const fd = openSync(logFile, 'a');
  const child = spawn(binary, args, { stdio: ['ignore', fd, fd], env });
  closeSync(fd);
  running.add(child);
  child.on('exit', () => running.delete(child));
  return child;
}

export async function terminate(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

export function exitDescription(child: ChildProcess, logFile: string): string | undefined {
  if (child.exitCode === null && child.signalCode === null) return undefined;
  let tail = '';
  try {
    tail = readFileSync(logFile, 'utf8').split('\n').slice(-15).join('\n');
  } catch {
    /* no log yet */
  }
  return `exited (${child.exitCode ?? child.signalCode}); last log lines:\n${tail}`;
}

function kubeconfig(server: string, pki: string): string {
  const b64 = (f: string) => readFileSync(join(pki, f)).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: dkv-test\n  cluster:\n    server: ${server}\n    certificate-authority-data: ${b64('ca.crt')}`,
    'users:',
    `- name: admin\n  user:\n    client-certificate-data: ${b64('admin.crt')}\n    client-key-data: ${b64('admin.key')}`,
    'contexts:',
    '- name: dkv-test\n  context:\n    cluster: dkv-test\n    user: admin',
    'current-context: dkv-test',
    '',
  ].join('\n');
}

/**
 * Starts a control plane from the binaries in `givenBinDir`, by default the
 * core from the cache (built on first use). With `withNodes` and the default
 * binaries, the node components are built meanwhile, or waited for where
 * global setup's background build has them in hand: a plane without nodes
 * never waits for them.
 */
export async function startControlPlane(givenBinDir?: string, options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  installExitHook();
  const started = Date.now();
  const binDir = givenBinDir ?? locateBinaries(CORE_BINARIES);
  const nodeBinDir = options.withNodes && givenBinDir === undefined ? buildBinaries(NODE_BINARIES) : Promise.resolve(binDir);
  nodeBinDir.catch(() => undefined); // awaited once kube-apiserver is up; until then its failure is not unhandled
  const dir = mkdtempSync(join(tmpdir(), 'dkv-control-plane-'));
  temporaryDirs.add(dir);
  const pki = join(dir, 'pki');
  mkdirSync(pki);
  const pkiResult = spawnSync(join(binDir, 'dkv-pki'), [pki], { encoding: 'utf8' });
  if (pkiResult.status !== 0) throw new Error(`dkv-pki failed: ${pkiResult.stderr}`);
  const tls = { ca: readFileSync(join(pki, 'ca.crt')), cert: readFileSync(join(pki, 'admin.crt')), key: readFileSync(join(pki, 'admin.key')) };

  const [etcdClient, etcdPeer, apiPort] = [await freePort(), await freePort(), await freePort()];
  const etcdLog = join(dir, 'etcd.log');
  const etcdUrl = `http://127.0.0.1:${etcdClient}`;
  const etcd = launch(join(binDir, 'etcd'), [
    '--name=dkv-test',
    `--data-dir=${join(dir, 'etcd')}`,
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
    `--initial-cluster=dkv-test=http://127.0.0.1:${etcdPeer}`,
    '--unsafe-no-fsync=true',
    '--log-level=warn',
  ], etcdLog);

  const server = `https://127.0.0.1:${apiPort}`;
  const apiLog = join(dir, 'kube-apiserver.log');
  const apiArgs = [
    `--etcd-servers=${etcdUrl}`,
    `--bind-address=127.0.0.1`,
    `--secure-port=${apiPort}`,
    `--cert-dir=${join(dir, 'apiserver-certs')}`,
    `--tls-cert-file=${join(pki, 'apiserver.crt')}`,
    `--tls-private-key-file=${join(pki, 'apiserver.key')}`,
    `--client-ca-file=${join(pki, 'ca.crt')}`,
    // Room for thousands of ClusterIP Services (the controller benchmark makes 2,000).
    `--service-cluster-ip-range=${options.inClusterClients ? IN_CLUSTER_SERVICE_RANGE : '10.96.0.0/16'}`,
    '--allow-privileged=true',
    '--authorization-mode=RBAC',
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${join(pki, 'sa.pub')}`,
    `--service-account-signing-key-file=${join(pki, 'sa.key')}`,
    // Nothing creates default service accounts without kube-controller-manager.
    ...(options.inClusterClients ? [] : ['--disable-admission-plugins=ServiceAccount']),
    // As OpenShift runs it: setting blockOwnerDeletion needs `update` on the owner's finalizers.
    '--enable-admission-plugins=OwnerReferencesPermissionEnforcement',
    '--endpoint-reconciler-type=none',
    '--v=1',
    ...(options.apiServerFlags ?? []),
  ];
  let apiserver: ChildProcess | undefined;
  let nodes: NodeComponents | undefined;
  let stopped = false;

  const startApiServer = async (): Promise<void> => {
    const child = launch(join(binDir, 'kube-apiserver'), apiArgs, apiLog);
    apiserver = child;
    await eventually('kube-apiserver to be ready', async () => yes((await httpProbe(`${server}/readyz`, { tls })).status === 200), 60_000, 100, () => exitDescription(child, apiLog));
  };
  const stopApiServer = async (): Promise<void> => terminate(apiserver);

  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await nodes?.stop();
    await terminate(apiserver);
    await terminate(etcd);
    if (!process.env.DKV_KEEP_CONTROL_PLANE) rmSync(dir, { recursive: true, force: true });
    temporaryDirs.delete(dir);
  };

  const kubeconfigPath = join(dir, 'kubeconfig');
  try {
    await eventually('etcd to be healthy', async () => yes((await httpProbe(`${etcdUrl}/health`)).status === 200), 30_000, 100, () => exitDescription(etcd, etcdLog));
    await startApiServer();
    writeFileSync(kubeconfigPath, kubeconfig(server, pki), { mode: 0o600 });
    if (options.withNodes) {
      const tools = { launch, terminate, exitDescription, freePort };
      nodes = await startNodeComponents({ binDir: await nodeBinDir, dir, kubeconfigPath, tools }, options.withNodes === true ? {} : options.withNodes);
    }
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    dir,
    kubeconfigPath,
    server,
    etcdUrl,
    startMillis: Date.now() - started,
    stopApiServer,
    startApiServer,
    stop,
    nodes,
  };
}
