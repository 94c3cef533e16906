/**
 * A real Kubernetes node beside the test control plane (issue 33): containerd
 * 2.x running pods through Debian's runc, and a kubelet of the control plane's
 * release registered against it. Where kwok (nodes.ts) only plays a pod's
 * lifecycle, this node pulls nothing but runs the images it is given (imported
 * with `ctr`), mounts volumes with the pod's user and fsGroup, enforces
 * readOnlyRootFilesystem and runs the probes.
 *
 * Everything lives in one temp dir (containerd's root and state, runc's state,
 * the kubelet's root dir, pod logs, the CNI config) and in one cgroup of each
 * hierarchy (`cgroupRoot`, /dkv-node-<hex>), and is removed by stop(). What the
 * sandbox needs, and why, is in test/cluster/README.md "Real node"; in short:
 * cgroup v1 (`failCgroupV1: false`, cgroupfs driver), no swap check, no
 * CAP_SYS_RESOURCE (containerd's `restrict_oom_score_adj`), no registry (images
 * assembled by node/oci-image.sh, the sandbox's pause included). Pods either
 * share the host's network (the default: a CNI config of `loopback` alone makes
 * the runtime report its network ready without touching the host's), or, with
 * `podNetwork`, get addresses from the bridge plugin inside a network namespace
 * the node creates for itself, where containerd and the kubelet run: no
 * interface, route or address of the host's changes, and the kubelet reaches
 * the API server through a relay over a unix socket.
 *
 * Built by test/cluster/node/build.sh (opt-in: nothing in the kwok lane builds it).
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { connect, createServer, type Server } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { KubeClient } from '../../kube/client.js';
import { eventually, yes } from '../support/eventually.js';
import { httpProbe } from '../support/http-probe.js';
import { startClusterDns, type ClusterDns } from './cluster-dns.js';
import { holdHostSysctls } from './host-sysctls.js';
import { kubernetesEndpointSlice, startServiceProxy, type ServiceProxy } from './service-proxy.js';
import { containerdConfig, kubeletConfig } from './real-node-config.js';
import { exitDescription, freePort, launch, terminate, type ControlPlane } from './control-plane.js';

const here = dirname(fileURLToPath(import.meta.url));
/** test/cluster/node in the source tree, whether running from source or from lib/. */
const nodeScripts = here.includes(join('lib', 'test')) ? join(here, '..', '..', '..', 'test', 'cluster', 'node') : join(here, 'node');

/** What the node runs, relative to node/build.sh's directory. */
export const REAL_NODE_BINARIES = ['kubelet', 'kube-proxy', 'containerd', 'containerd-shim-runc-v2', 'ctr', 'pause', 'coredns', 'cni/loopback', 'cni/bridge', 'cni/host-local', 'cni/portmap'] as const;
/** The sandbox image the containerd config pins (Kubernetes 1.36's), assembled from node/pause. */
export const PAUSE_IMAGE = 'registry.k8s.io/pause:3.10.1';
/** A first build of the node's parts on 2 busy cores: ~6.5 minutes after the control plane's build, ~17 with an empty Go build cache. */
export const REAL_NODE_BUILD_MS = 25 * 60_000;

/**
 * The kernel settings the kubelet sets at start when `protectKernelDefaults` is
 * false (and refuses to start without, when it is true): they are host-wide, so
 * the node puts back what it found when it stops.
 */
const KUBELET_SYSCTLS = ['vm/overcommit_memory', 'vm/panic_on_oom', 'kernel/panic', 'kernel/panic_on_oops', 'kernel/keys/root_maxkeys', 'kernel/keys/root_maxbytes'];

/** What this machine lacks to run a node (empty: nothing), each named for the skip line. */
export function realNodeBlockers(): string[] {
  const blockers: string[] = [];
  if (process.getuid?.() !== 0) blockers.push('root (containerd and the kubelet mount, create namespaces and cgroups)');
  const has = (command: string, ...args: string[]) => spawnSync(command, args, { stdio: 'ignore' }).status === 0;
  // node/build.sh installs Debian's runc where it is missing.
  if (!has('runc', '--version') && !has('apt-get', '--version')) blockers.push('runc on the PATH, or apt-get to install it');
  const v1 = ['memory', 'cpu', 'pids'].every((c) => existsSync(`/sys/fs/cgroup/${c}/cgroup.procs`));
  const v2 = existsSync('/sys/fs/cgroup/cgroup.controllers');
  if (!v1 && !v2) blockers.push('cgroup hierarchies (neither v1 memory/cpu/pids nor v2 under /sys/fs/cgroup)');
  if (!readFileSync('/proc/filesystems', 'utf8').includes('overlay')) blockers.push('overlayfs (containerd\'s snapshotter)');
  // podNetwork: the node's namespace (ip, nsenter), and a client inside it (curl).
  for (const tool of ['ip', 'nsenter', 'curl']) if (!has('bash', '-c', `command -v ${tool}`)) blockers.push(`${tool} on the PATH`);
  // serviceProxy: kube-proxy's rules (node/build.sh installs Debian's iptables where it is missing).
  if (!has('bash', '-c', 'command -v iptables-restore') && !has('apt-get', '--version')) blockers.push('iptables on the PATH, or apt-get to install it');
  if (!hostAddress()) blockers.push('an IPv4 address besides loopback (the kubelet refuses a loopback node IP)');
  return blockers;
}

/** The first non-loopback IPv4 address: the node's InternalIP, and hostNetwork pods' IP. */
export function hostAddress(): string | undefined {
  for (const addresses of Object.values(networkInterfaces())) {
    for (const a of addresses ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return undefined;
}

/** node/build.sh, niced: the directory holding the node's parts (a cache hit once built). */
export function buildRealNodeParts(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('nice', ['-n', '10', 'bash', join(nodeScripts, 'build.sh')], { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      const dir = stdout.trim().split('\n').pop() ?? '';
      if (code !== 0 || !dir.startsWith('/')) reject(new Error(`test/cluster/node/build.sh failed with exit code ${code}`));
      else resolve(dir);
    });
  });
}

export interface ImageSpec {
  /** The reference pods name, e.g. registry.k8s.io/etcd:3.6.8-0. */
  readonly name: string;
  /** `SRC:DEST[:MODE]` files and `DEST[:MODE]` directories (see node/oci-image.sh). */
  readonly files?: readonly string[];
  readonly dirs?: readonly string[];
  /** `SRC:DEST` directories copied whole, modes kept. */
  readonly trees?: readonly string[];
  readonly user?: string;
  readonly entrypoint?: string | readonly string[];
  readonly cmd?: readonly string[];
  readonly workdir?: string;
  readonly env?: readonly string[];
}

/** The arguments of node/oci-image.sh for `spec`. */
function imageArguments(outFile: string, spec: ImageSpec): string[] {
  const args = [join(nodeScripts, 'oci-image.sh'), outFile, spec.name];
  for (const f of spec.files ?? []) args.push('--file', f);
  for (const d of spec.dirs ?? []) args.push('--dir', d);
  for (const t of spec.trees ?? []) args.push('--tree', t);
  if (spec.user) args.push('--user', spec.user);
  for (const e of typeof spec.entrypoint === 'string' ? [spec.entrypoint] : spec.entrypoint ?? []) args.push('--entrypoint', e);
  for (const c of spec.cmd ?? []) args.push('--cmd', c);
  if (spec.workdir) args.push('--workdir', spec.workdir);
  for (const e of spec.env ?? []) args.push('--env', e);
  return args;
}

/** Assembles an OCI image archive with node/oci-image.sh; returns its path. */
export function assembleImage(outFile: string, spec: ImageSpec): string {
  const result = spawnSync('bash', imageArguments(outFile, spec), { encoding: 'utf8', maxBuffer: 16 << 20 });
  if (result.status !== 0) throw new Error(`oci-image.sh ${spec.name} failed: ${result.stderr}`);
  return outFile;
}

/**
 * assembleImage without blocking this process: the project's image takes
 * seconds to tens of seconds, during which a node with its own network
 * namespace reaches the API server through this process' relay.
 */
export function assembleImageInBackground(outFile: string, spec: ImageSpec): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('bash', imageArguments(outFile, spec), { maxBuffer: 16 << 20 }, (error, _stdout, stderr) => {
      if (error) reject(new Error(`oci-image.sh ${spec.name} failed: ${stderr || error.message}`));
      else resolve(outFile);
    });
  });
}

export interface RealNodeOptions {
  /** The Node's name (default dkv-node-<hex>); also its cgroupRoot and, with podNetwork, its network namespace. */
  readonly name?: string;
  /**
   * Run the node in a network namespace of its own, with the bridge plugin
   * giving pods addresses in POD_SUBNET (default: pods use the host's network).
   */
  readonly podNetwork?: boolean;
  /**
   * With podNetwork: CoreDNS on the node's address, the kubelet's clusterDNS,
   * answering for this cluster domain (cluster-dns.ts). Pods then resolve
   * Services and a headless Service's member names as on any cluster.
   */
  readonly clusterDomain?: string;
  /**
   * With podNetwork: kube-proxy (service-proxy.ts) in the node's namespace, so
   * that Services' ClusterIPs route, and the `kubernetes` Service's endpoint is
   * the node's relay to the API server: a pod reaches the API server as
   * in-cluster clients do (with a plane started with `inClusterClients`, whose
   * serving certificate names that ClusterIP).
   */
  readonly serviceProxy?: boolean;
}

/** Pods' addresses with podNetwork (the bridge's gateway is .1), inside the node's own network namespace. */
export const POD_SUBNET = '10.244.0.0/24';
/** The node's address with podNetwork: on a veth inside its namespace. */
const NAMESPACED_NODE_ADDRESS = '10.213.0.2';

/** Inside the node's namespace: 127.0.0.1:<port> (and <port> on each further address) piped to the unix socket the test process serves (argv: port, socket, addresses). */
const RELAY_SCRIPT = `import { connect, createServer } from 'node:net';
const [port, socket, ...alsoOn] = process.argv.slice(2);
for (const host of ['127.0.0.1', ...alsoOn]) createServer((down) => {
  const up = connect(socket);
  down.pipe(up).pipe(down);
  const close = () => { down.destroy(); up.destroy(); };
  down.on('error', close); up.on('error', close); down.on('close', close); up.on('close', close);
}).listen(Number(port), host);
`;

export interface RealNode {
  /** The Node's name (its kubelet's --hostname-override). */
  readonly name: string;
  /** Its InternalIP, which hostNetwork pods share: the host's address, or with podNetwork its own inside its namespace. */
  readonly address: string;
  /** The temp dir holding everything the node writes (removed by stop unless DKV_KEEP_CONTROL_PLANE is set). */
  readonly dir: string;
  /** The domain its cluster DNS serves (options.clusterDomain), when it has one. */
  readonly clusterDomain?: string;
  /** Milliseconds from spawning containerd to the Node being Ready. */
  readonly startMillis: number;
  /** Runs `ctr -n k8s.io ARGS` against this node's containerd; its stdout. */
  ctr(...args: string[]): string;
  /**
   * Imports an OCI archive (assembleImage) into the namespace the kubelet's pods use.
   * Without blocking: with podNetwork the kubelet reaches the API server through
   * this process, and a large image's import takes seconds.
   */
  importImage(archive: string): Promise<void>;
  /** Runs a command in the node's network (its namespace with podNetwork, else the host's); its stdout. */
  inNetwork(command: string, ...args: string[]): string;
  /** The host PID of a container, from its status' `containerd://<id>`. */
  containerPid(containerId: string): number;
  /** Stops the kubelet, every container, containerd; unmounts, removes the cgroups and the dir; puts the kernel settings back. */
  stop(): Promise<void>;
}

function cgroupHierarchies(): string[] {
  if (existsSync('/sys/fs/cgroup/cgroup.controllers')) return ['/sys/fs/cgroup'];
  return readdirSync('/sys/fs/cgroup').map((d) => join('/sys/fs/cgroup', d)).filter((d) => existsSync(join(d, 'cgroup.procs')));
}

/** Removes a cgroup tree bottom-up (a cgroup is removed with rmdir once it has no children and no processes). */
function removeCgroup(path: string): void {
  if (!existsSync(path)) return;
  for (const entry of readdirSync(path, { withFileTypes: true })) if (entry.isDirectory()) removeCgroup(join(path, entry.name));
  try {
    rmdirSync(path);
  } catch {
    /* still has processes: left for the kernel to report; stop() checks what matters */
  }
}

/** PIDs of the runc shims started by the containerd listening on `socket` (their command line names it). */
function shimsOf(socket: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (argv[0].endsWith('containerd-shim-runc-v2') && argv.includes(socket)) pids.push(Number(entry));
    } catch {
      /* exited meanwhile */
    }
  }
  return pids;
}

/** Mount points under `dir`, deepest first (from this process' mountinfo). */
function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' ')[4]).filter((m) => m && (m === dir || m.startsWith(`${dir}/`)))
    .sort((a, b) => b.length - a.length);
}

const ready = (node: any): boolean => node?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True') ?? false;

/**
 * Starts containerd and a kubelet registered against `plane` as `name`, imports
 * the pause image, waits until the Node is Ready and removes the not-ready
 * taint nobody else would (no kube-controller-manager needs to run).
 */
export async function startRealNode(plane: ControlPlane, binDir: string, options: RealNodeOptions = {}): Promise<RealNode> {
  const started = Date.now();
  const address = options.podNetwork ? NAMESPACED_NODE_ADDRESS : hostAddress();
  if (!address) throw new Error('no IPv4 address besides loopback for the node');
  const name = options.name ?? `dkv-node-${randomBytes(3).toString('hex')}`;
  const netns = options.podNetwork ? `/run/netns/${name}` : undefined;
  /** The binary and its arguments, entered into the node's network namespace when it has one (nsenter execs: the PID is the binary's). */
  const inNetns = (binary: string, args: string[]): [string, string[]] => (netns ? ['nsenter', [`--net=${netns}`, '--', binary, ...args]] : [binary, args]);
  const ip = (...args: string[]): void => {
    const r = spawnSync('ip', args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr}`);
  };
  // Short: containerd's sockets live here, and a unix socket path has at most 107 bytes.
  const dir = mkdtempSync(join(tmpdir(), 'dkv-node-'));
  const cgroupRoot = `/${name}`;
  // Put back when the last node on this machine stops (host-sysctls.ts: nodes of other processes may overlap this one).
  const releaseSysctls = holdHostSysctls(name, KUBELET_SYSCTLS);
  const env = { ...process.env, PATH: `${binDir}:${process.env.PATH}` };
  const ctr = (...args: string[]): string => {
    const r = spawnSync(join(binDir, 'ctr'), ['-a', join(dir, 'containerd.sock'), '-n', 'k8s.io', ...args], { encoding: 'utf8', env });
    if (r.status !== 0) throw new Error(`ctr ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
  let containerd: ReturnType<typeof launch> | undefined;
  let kubelet: ReturnType<typeof launch> | undefined;
  let relayInside: ReturnType<typeof launch> | undefined;
  let relayOutside: Server | undefined;
  let dns: ClusterDns | undefined;
  let proxy: ServiceProxy | undefined;
  let stopped = false;

  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await terminate(kubelet);
    // Containers and their runc shims outlive containerd: kill and delete every
    // container through runc's own state (in the dir), whether containerd still
    // answers or not, then end the shims that served this containerd.
    const runcRoot = join(dir, 'runc', 'k8s.io');
    if (existsSync(runcRoot)) {
      const ids = spawnSync('runc', ['--root', runcRoot, 'list', '-q'], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
      for (const id of ids) spawnSync('runc', ['--root', runcRoot, 'delete', '--force', id]);
    }
    await terminate(containerd);
    for (const pid of shimsOf(join(dir, 'containerd.sock'))) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone meanwhile */
      }
    }
    await terminate(proxy?.process);
    await terminate(dns?.process);
    await terminate(relayInside);
    await new Promise<void>((resolve) => (relayOutside ? relayOutside.close(() => resolve()) : resolve()));
    // Its bridge and veths go with it.
    if (netns && existsSync(netns)) spawnSync('ip', ['netns', 'delete', name]);
    for (const mount of mountsUnder(dir)) spawnSync('umount', ['-l', mount]);
    for (const hierarchy of cgroupHierarchies()) removeCgroup(join(hierarchy, cgroupRoot));
    releaseSysctls();
    client.close();
    if (!process.env.DKV_KEEP_CONTROL_PLANE) rmSync(dir, { recursive: true, force: true });
  };

  try {
    // The kubelet wants its cgroupRoot to exist in every hierarchy.
    for (const hierarchy of cgroupHierarchies()) mkdirSync(join(hierarchy, cgroupRoot), { recursive: true });
    mkdirSync(join(dir, 'cni'), { recursive: true });
    if (netns) {
      ip('netns', 'add', name);
      ip('-n', name, 'link', 'set', 'lo', 'up');
      // The node's own interface: one end of a veth pair whose both ends stay in the namespace (this kernel has no dummy driver).
      ip('-n', name, 'link', 'add', 'dkv0', 'type', 'veth', 'peer', 'name', 'dkv1');
      ip('-n', name, 'addr', 'add', `${address}/24`, 'dev', 'dkv0');
      ip('-n', name, 'link', 'set', 'dkv1', 'up');
      ip('-n', name, 'link', 'set', 'dkv0', 'up');
      // The API server listens on the host's loopback: the kubelet's 127.0.0.1:<same port> is a relay to it.
      const { hostname, port } = new URL(plane.server);
      const socket = join(dir, 'apiserver.sock');
      const outside = createServer((down) => {
        const up = connect(Number(port), hostname);
        down.pipe(up).pipe(down);
        const close = () => { down.destroy(); up.destroy(); };
        for (const s of [down, up]) { s.on('error', close); s.on('close', close); }
      });
      relayOutside = outside;
      await new Promise<void>((resolve, reject) => outside.once('error', reject).listen(socket, () => resolve()));
      writeFileSync(join(dir, 'relay.mjs'), RELAY_SCRIPT);
      const relayLog = join(dir, 'relay.log');
      // With serviceProxy also on the node's address: the `kubernetes` Service's endpoint, which pods reach through kube-proxy's rules.
      const relayChild = launch(...inNetns(process.execPath, [join(dir, 'relay.mjs'), port, socket, ...(options.serviceProxy ? [address] : [])]), relayLog);
      relayInside = relayChild;
      await eventually('the API server relay inside the node\'s namespace', async () => yes(spawnSync('nsenter', [`--net=${netns}`, '--', 'bash', '-c', `exec 3<>/dev/tcp/127.0.0.1/${port}`]).status === 0), 10_000, 100, () => exitDescription(relayChild, relayLog));
      // The bridge plugin makes dkv-br0 in the namespace it runs in: the node's. host-local keeps its leases in the dir.
      writeFileSync(join(dir, 'cni', '10-bridge.conflist'), JSON.stringify({
        cniVersion: '1.0.0',
        name: 'dkv-pods',
        plugins: [{ type: 'bridge', bridge: 'dkv-br0', isGateway: true, ipMasq: false, hairpinMode: true, ipam: { type: 'host-local', ranges: [[{ subnet: POD_SUBNET }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: join(dir, 'cni-ipam') } }],
      }));
    } else {
      // The runtime reports its network ready once one CNI network is configured;
      // loopback alone never touches the host's network (pods run with hostNetwork).
      writeFileSync(join(dir, 'cni', '10-loopback.conflist'), JSON.stringify({ cniVersion: '1.0.0', name: 'dkv-loopback-only', plugins: [{ type: 'loopback' }] }));
    }
    writeFileSync(join(dir, 'containerd.toml'), containerdConfig(dir, binDir, PAUSE_IMAGE));
    const containerdLog = join(dir, 'containerd.log');
    const containerdChild = launch(...inNetns(join(binDir, 'containerd'), ['--config', join(dir, 'containerd.toml')]), containerdLog, env);
    containerd = containerdChild;
    await eventually('containerd to answer', async () => yes(ctr('version').includes('Server')), 30_000, 100, () => exitDescription(containerdChild, containerdLog));
    const pauseArchive = assembleImage(join(dir, 'pause.tar'), { name: PAUSE_IMAGE, files: [`${join(binDir, 'pause')}:/pause`], entrypoint: '/pause', user: '65535:65535' });
    ctr('images', 'import', pauseArchive);

    if (options.clusterDomain) {
      if (!netns) throw new Error('clusterDomain needs podNetwork: CoreDNS serves on the node\'s own address, inside its namespace');
      const readyPort = await freePort();
      const coredns = startClusterDns({
        binary: join(binDir, 'coredns'), dir, kubeconfigPath: plane.kubeconfigPath, address, readyPort, domain: options.clusterDomain,
        launch: (binary, args, logFile) => launch(...inNetns(binary, args), logFile),
      });
      dns = coredns;
      await eventually('CoreDNS to be ready (its kubernetes plugin synced)', async () => yes(spawnSync('nsenter', [`--net=${netns}`, '--', 'curl', '-sf', `http://127.0.0.1:${readyPort}/ready`]).status === 0), 30_000, 200, () => exitDescription(coredns.process, coredns.logFile));
    }
    const [port, healthzPort] = [await freePort(), await freePort()];
    const dnsConfig = options.clusterDomain ? { address, domain: options.clusterDomain } : undefined;
    writeFileSync(join(dir, 'kubelet.yaml'), kubeletConfig({ dir, pki: join(plane.dir, 'pki'), port, healthzPort, cgroupRoot, dns: dnsConfig }));
    const kubeletLog = join(dir, 'kubelet.log');
    const kubeletChild = launch(...inNetns(join(binDir, 'kubelet'), [
      `--config=${join(dir, 'kubelet.yaml')}`,
      `--kubeconfig=${plane.kubeconfigPath}`,
      `--root-dir=${join(dir, 'kubelet')}`,
      `--cert-dir=${join(dir, 'kubelet-pki')}`,
      `--hostname-override=${name}`,
      `--node-ip=${address}`,
      '--v=1',
    ]), kubeletLog, env);
    kubelet = kubeletChild;
    // Inside its own namespace the kubelet's 127.0.0.1 is not ours: there the Node's Ready condition alone tells.
    if (!netns) await eventually(`the kubelet's /healthz`, async () => yes((await httpProbe(`http://127.0.0.1:${healthzPort}/healthz`)).status === 200), 60_000, 200, () => exitDescription(kubeletChild, kubeletLog));
    await eventually(`Node ${name} to be Ready`, async () => yes(ready(await client.request('GET', `/api/v1/nodes/${name}`))), 90_000, 200, () => exitDescription(kubeletChild, kubeletLog));
    const node = await client.request('GET', `/api/v1/nodes/${name}`);
    const taints = (node.spec?.taints ?? []).filter((t: any) => t.key !== 'node.kubernetes.io/not-ready');
    await client.request('PATCH', `/api/v1/nodes/${name}`, { body: { spec: { taints } }, contentType: 'application/merge-patch+json' });
    if (options.serviceProxy) {
      if (!netns) throw new Error('serviceProxy needs podNetwork: kube-proxy\'s rules and the API server\'s endpoint live in the node\'s namespace');
      await client.request('POST', '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices', { body: kubernetesEndpointSlice(address, Number(new URL(plane.server).port)) });
      const [healthzPort, metricsPort] = [await freePort(), await freePort()];
      const started = startServiceProxy({
        binary: join(binDir, 'kube-proxy'), dir, kubeconfigPath: plane.kubeconfigPath, nodeName: name, clusterCidr: POD_SUBNET, healthzPort, metricsPort,
        launch: (binary, args, logFile) => launch(...inNetns(binary, args), logFile, env),
      });
      proxy = started;
      // Healthy once it has written the rules of what it has seen (the `kubernetes` Service among them).
      await eventually('kube-proxy to be healthy (its rules written)', async () => yes(spawnSync('nsenter', [`--net=${netns}`, '--', 'curl', '-sf', `http://127.0.0.1:${healthzPort}/healthz`]).status === 0), 60_000, 200, () => exitDescription(started.process, started.logFile));
    }
  } catch (e) {
    await stop();
    throw e;
  }

  return {
    name,
    address,
    dir,
    clusterDomain: options.clusterDomain,
    startMillis: Date.now() - started,
    ctr,
    importImage: (archive) => new Promise<void>((resolve, reject) => {
      execFile(join(binDir, 'ctr'), ['-a', join(dir, 'containerd.sock'), '-n', 'k8s.io', 'images', 'import', archive], { env }, (error, _stdout, stderr) => {
        if (error) reject(new Error(`ctr images import ${archive}: ${stderr || error.message}`));
        else resolve();
      });
    }),
    inNetwork(command, ...args) {
      const [binary, argv] = inNetns(command, args);
      const r = spawnSync(binary, argv, { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} in ${name}'s network: exit ${r.status}: ${r.stderr}`);
      return r.stdout;
    },
    containerPid(containerId) {
      const id = containerId.replace(/^containerd:\/\//, '');
      const line = ctr('tasks', 'ls').split('\n').find((l) => l.startsWith(`${id} `));
      const pid = Number(line?.trim().split(/\s+/)[1]);
      if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no running task for container ${id}`);
      return pid;
    },
    stop,
  };
}
