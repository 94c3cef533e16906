/**
 * Runs the members of a generated StatefulSet as real etcd processes on
 * loopback, playing the parts Kubernetes plays for a pod and nothing more:
 *
 * - the kubelet's: the container's environment from its fieldRefs
 *   (POD_NAME, POD_NAMESPACE), its ConfigMaps' keys (configMapKeyRef) and
 *   its ConfigMaps and Secrets (envFrom), read when the container starts; and `$(VAR)` expansion in its arguments;
 *   the member's volume, a directory of its own mounted at the mount path;
 *   each Secret volume the container mounts (the member's certificates), a
 *   directory holding the Secret's keys as files (read when the container
 *   starts, as the kubelet mounts them), at the mount path in the arguments;
 *   init containers run to completion before the member starts (runInit);
 * - cluster DNS and the network's: every member's per-pod DNS name becomes
 *   127.0.0.1, and since all members share one address, each gets its own
 *   client, peer and metrics ports. Listen addresses (0.0.0.0) become
 *   127.0.0.1: tests stay on loopback. The scheme (http or https) is the
 *   template's: with TLS, clients reach the members by https (etcdPost with
 *   the client certificate trustClient registered).
 *
 * Every other argument reaches etcd exactly as the generator wrote it. No
 * container engine runs images: `etcd` is the binary the test control plane
 * builds, `dkv` this project's compiled CLI, and `extraPath` (etcdutl, say)
 * is on every container's PATH.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { Agent, request as httpsRequest } from 'node:https';
import { basename, join } from 'node:path';
import { exitDescription, freePort, launch, terminate } from '../cluster/control-plane.js';
import { packageRoot } from '../../api/package-root.js';
import { EtcdMembership } from '../../engines/etcd/membership.js';
import { byRole, synth } from '../generator/support.js';
import { eventually } from './eventually.js';
import { httpProbe } from './http-probe.js';
import { liveTlsOf, tlsSecretNames } from '../../engines/etcd/tls-files.js';
import { clientTlsFromDirectory, tlsAgent, type EtcdClientTls } from '../../engines/etcd/etcd-http.js';
import { authoritySecretData, issueClusterCertificates, leafSecretData, REVOCATION_LIST_KEY, revocationListData } from '../../engines/etcd/certificates.js';
import { decodeSecretData, secretValueBytes } from '../../engines/etcd/secret-data.js';
import { clusterIdentity } from '../../model/cluster-identity.js';
import { loadDefaultConfig } from '../../api/config.js';
import { KubeApiError, resourcePath, type KubeClient } from '../../kube/client.js';

export interface ContainerSpec {
  name?: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string }; configMapKeyRef?: { name: string; key: string; optional?: boolean } } }[];
  envFrom?: { configMapRef?: { name: string; optional?: boolean }; secretRef?: { name: string; optional?: boolean } }[];
  ports?: { name: string; containerPort: number }[];
  volumeMounts?: { name: string; mountPath: string }[];
}

export interface StatefulSetLike {
  metadata: { name: string };
  spec: { template: { spec: { containers: ContainerSpec[]; initContainers?: ContainerSpec[]; volumes?: { name: string; secret?: { secretName: string } }[] } } };
}

/** Where one member listens, on loopback. */
export interface MemberAddress {
  readonly name: string;
  readonly clientUrl: string;
  readonly peerUrl: string;
  readonly metricsUrl: string;
}

export interface LocalMember extends MemberAddress {
  /** The arguments and environment etcd was started with, after the substitutions above. */
  readonly args: readonly string[];
  readonly environment: Readonly<Record<string, string>>;
  readonly log: string;
  readonly process: ChildProcess;
}

/** The data of a ConfigMap by name, as the kubelet reads it when a container starts. */
export type ConfigMapReader = (name: string) => Promise<Record<string, string>>;
/** The decoded data of a Secret by name, or undefined when there is none. */
export type SecretReader = (name: string) => Promise<Record<string, string> | undefined>;

/** A container as it would run: the binary, its arguments and environment after the substitutions above. */
interface PreparedContainer {
  readonly binary: string;
  readonly args: string[];
  readonly environment: Record<string, string>;
  readonly volume: string;
}

/** How an init container ended. */
export interface InitRun {
  readonly container: string;
  readonly code: number | null;
  readonly log: string;
  /** What this run wrote (stdout and stderr, in order). */
  readonly output: string;
}

export class LocalEtcdCluster {
  readonly members = new Map<string, LocalMember>();
  private readonly addresses = new Map<string, MemberAddress>();
  private readonly ports = new Set<number>();
  /** Which listeners the template puts TLS on: their URLs are https. */
  private readonly tls: { peer: boolean; client: boolean };
  /** The member certificate last mounted (tls.crt, tls.key, ca.crt). */
  private memberCertificate?: EtcdClientTls;
  /** Each Secret volume written out: its directory → the Secret's name. */
  private readonly mountedSecrets = new Map<string, string>();

  constructor(
    private readonly statefulSet: StatefulSetLike,
    private readonly namespace: string,
    private readonly binDir: string,
    private readonly dir: string,
    private readonly configMaps: ConfigMapReader,
    private readonly secrets: SecretReader = async () => undefined,
    private readonly extraPath: readonly string[] = [],
  ) {
    this.tls = liveTlsOf(statefulSet as unknown as Record<string, unknown>) ?? { peer: false, client: false };
    clusters.add(this);
  }

  /**
   * A client certificate for the tests' own calls: the members' certificate
   * last mounted, which etcd accepts from a client too (it authenticates
   * peers that dial, so it carries clientAuth). Undefined before a member
   * with TLS started.
   */
  clientTls(): EtcdClientTls | undefined {
    return this.memberCertificate;
  }

  /** Whether a member of this cluster listens at `origin`. */
  serves(origin: string): boolean {
    return [...this.addresses.values()].some((a) => new URL(a.clientUrl).origin === origin);
  }

  /**
   * From now on the members' client URLs (addressOf, and so the tests'
   * clients) use this scheme: a cluster created plain, or one moving to TLS
   * whose clients move to https during its grace period. The members listen
   * with the schemes their arguments give, whatever this says.
   */
  useClientScheme(secure: boolean): void {
    for (const [pod, address] of this.addresses) {
      this.addresses.set(pod, { ...address, clientUrl: address.clientUrl.replace(/^https?:/, secure ? 'https:' : 'http:') });
    }
    this.tls.client = secure;
  }

  /** The loopback address of a member, by pod name (allocated on first use). */
  async address(pod: string): Promise<MemberAddress> {
    let address = this.addresses.get(pod);
    if (!address) {
      const [client, peer, metrics] = [await this.unusedPort(), await this.unusedPort(), await this.unusedPort()];
      const scheme = (tls: boolean) => (tls ? 'https' : 'http');
      address = { name: pod, clientUrl: `${scheme(this.tls.client)}://127.0.0.1:${client}`, peerUrl: `${scheme(this.tls.peer)}://127.0.0.1:${peer}`, metricsUrl: `http://127.0.0.1:${metrics}` };
      this.addresses.set(pod, address);
    }
    return address;
  }

  /**
   * The client URL of a member with the scheme its running process serves
   * (from its own `--listen-client-urls`; https where it serves both), for an
   * observer that must reach every member that is up: a client moving to
   * https during a migration (useClientScheme) does so when it reads the
   * migration's phase, and a member restarted https-only before that is still
   * up. Before a member started, the address as addressOf gives it.
   */
  servingClientUrl(pod: string): string {
    const address = this.addressOf(pod);
    const listen = this.members.get(pod)?.args.find((a) => a.startsWith('--listen-client-urls='));
    if (!listen) return address.clientUrl;
    return address.clientUrl.replace(/^https?:/, listen.includes('https://') ? 'https:' : 'http:');
  }

  /** A free port that no member was given yet: the system may hand out a port again once it was closed. */
  private async unusedPort(): Promise<number> {
    for (;;) {
      const port = await freePort();
      if (!this.ports.has(port)) {
        this.ports.add(port);
        return port;
      }
    }
  }

  /** An address allocated before (see address), for callers that cannot wait. */
  addressOf(pod: string): MemberAddress {
    const address = this.addresses.get(pod);
    if (!address) throw new Error(`no address allocated for ${pod}`);
    return address;
  }

  /** Starts the pod of this ordinal as the StatefulSet's template describes it. */
  start(ordinal: number): Promise<LocalMember> {
    return this.startPod(`${this.statefulSet.metadata.name}-${ordinal}`, this.statefulSet.spec.template.spec.containers[0]);
  }

  /**
   * Starts a pod's member container. `volume` names the member's volume (a
   * PVC's uid, say): a new volume is a new, empty directory.
   */
  async startPod(pod: string, container: ContainerSpec, volumeId = 'volume'): Promise<LocalMember> {
    const own = await this.address(pod);
    const { binary, args, environment } = await this.prepare(pod, container, volumeId);
    const log = join(this.dir, `${pod}.log`);
    const child = launch(binary, args, log, environment);
    const member: LocalMember = { ...own, args, environment, log, process: child };
    this.members.set(pod, member);
    return member;
  }

  /** Runs one init container of a pod to completion, on the same volume the member gets; its output is in the returned log. */
  async runInit(pod: string, container: ContainerSpec, volumeId = 'volume'): Promise<InitRun> {
    const { binary, args, environment } = await this.prepare(pod, container, volumeId);
    const log = join(this.dir, `${pod}.${container.name ?? 'init'}.log`);
    const from = existsSync(log) ? statSync(log).size : 0;
    const fd = openSync(log, 'a');
    let code: number | null;
    try {
      const child = spawn(binary, args, { stdio: ['ignore', fd, fd], env: environment });
      code = await new Promise<number | null>((resolve, reject) => {
        child.on('error', reject);
        child.on('close', resolve);
      });
    } finally {
      closeSync(fd);
    }
    return { container: container.name ?? 'init', code, log, output: readFileSync(log).subarray(from).toString('utf8') };
  }

  private async prepare(pod: string, container: ContainerSpec, volumeId: string): Promise<PreparedContainer> {
    const env: Record<string, string> = {};
    for (const from of container.envFrom ?? []) {
      if (from.configMapRef) {
        // An optional ConfigMap that does not exist sets nothing, as with a kubelet (the recover container's, outside a recovery).
        const { name, optional } = from.configMapRef;
        const data = await this.configMaps(name).catch((e: { status?: number }) => {
          if (optional && e.status === 404) return undefined;
          throw e;
        });
        Object.assign(env, data ?? {});
      }
      if (from.secretRef) {
        const data = await this.secrets(from.secretRef.name);
        if (!data && !from.secretRef.optional) throw new Error(`${pod}: Secret ${from.secretRef.name} not found`);
        Object.assign(env, data ?? {});
      }
    }
    for (const e of container.env ?? []) {
      const field = e.valueFrom?.fieldRef?.fieldPath;
      const keyRef = e.valueFrom?.configMapKeyRef;
      if (keyRef) {
        // One key of a ConfigMap, read when the container starts; a missing one stops the start, as with a kubelet.
        const data = await this.configMaps(keyRef.name).catch((err: { status?: number }) => {
          if (keyRef.optional && err.status === 404) return undefined;
          throw err;
        });
        if (data?.[keyRef.key] === undefined && !keyRef.optional) throw new Error(`${pod}: key ${keyRef.key} of ConfigMap ${keyRef.name} not found`);
        if (data?.[keyRef.key] !== undefined) env[e.name] = data[keyRef.key];
        continue;
      }
      env[e.name] = field === 'metadata.name' ? pod : field === 'metadata.namespace' ? this.namespace : (e.value ?? '');
    }
    const expanded = [...(container.command ?? []), ...(container.args ?? [])].map((a) => a.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, name) => env[name] ?? m));
    const [binary, ...generated] = expanded;
    const port = (name: string) => this.statefulSet.spec.template.spec.containers[0].ports?.find((p) => p.name === name)?.containerPort;
    const own = await this.address(pod);
    const volume = join(this.dir, `${pod}-${volumeId}`);
    const mountPath = container.volumeMounts?.[0]?.mountPath;
    const secretMounts = await this.materialiseSecrets(pod, container);
    // etcd reads its ETCD_* variables as it reads flags: addresses in them are substituted the same way.
    const fromEnvironment = Object.entries(env).filter(([name]) => name.startsWith('ETCD_')).map(([name, value]) => `${name}=${value}`);
    const args: string[] = [];
    const environment: Record<string, string> = { ...env };
    for (const arg of [...generated, ...fromEnvironment]) {
      let out = arg;
      // Per-pod DNS names (<pod>.<service>.<namespace>.svc.<domain>:<port>) → that member's loopback port.
      const urls = [...out.matchAll(/https?:\/\/([a-z][a-z0-9-]*)\.[a-z0-9.-]+:(\d+)/g)];
      for (const [url, host, p] of urls) {
        const member = await this.address(host);
        const target = Number(p) === port('peer') ? member.peerUrl : Number(p) === port('client') ? member.clientUrl : undefined;
        if (!target) throw new Error(`${pod}: ${url} in ${arg} names no port of the member`);
        // The argument's own scheme: a member moving to TLS advertises http and https URLs of one address.
        out = out.replace(url, `${url.split(':')[0]}:${target.slice(target.indexOf('//'))}`);
      }
      const hostPort = (url: string) => url.replace(/^https?:\/\//, '');
      // Every occurrence: one address may be listed once per scheme (a client port serving plain HTTP beside TLS).
      out = out
        .replaceAll(`0.0.0.0:${port('client')}`, hostPort(own.clientUrl))
        .replaceAll(`0.0.0.0:${port('peer')}`, hostPort(own.peerUrl))
        .replaceAll(`0.0.0.0:${port('metrics')}`, hostPort(own.metricsUrl));
      const secret = secretMounts.find((m) => out.includes(`=${m.mountPath}/`));
      if (secret) out = out.replace(`=${secret.mountPath}/`, `=${secret.dir}/`);
      else if (mountPath && out.includes(`=${mountPath}`)) out = out.replace(`=${mountPath}`, `=${volume}`);
      if (out.startsWith('ETCD_')) {
        const at = out.indexOf('=');
        environment[out.slice(0, at)] = out.slice(at + 1);
      } else {
        args.push(out);
      }
    }
    mkdirSync(volume, { recursive: true });
    environment.PATH = [...this.extraPath, process.env.PATH].join(':');
    if (binary === 'dkv') return { binary: process.execPath, args: [join(packageRoot(), 'bin', 'dkv.js'), ...args], environment, volume };
    return { binary: binary.includes('/') ? binary : join(this.binDir, binary), args, environment, volume };
  }

  /** Each Secret volume the container mounts, written out as the kubelet would: one file per key, in a directory of the pod's. */
  private async materialiseSecrets(pod: string, container: ContainerSpec): Promise<{ mountPath: string; dir: string }[]> {
    const volumes = this.statefulSet.spec.template.spec.volumes ?? [];
    const mounted: { mountPath: string; dir: string }[] = [];
    for (const mount of container.volumeMounts ?? []) {
      const secretName = volumes.find((v) => v.name === mount.name)?.secret?.secretName;
      if (!secretName) continue;
      const data = await this.secrets(secretName);
      if (!data) throw new Error(`${pod}: Secret ${secretName} not found (volume ${mount.name}): the kubelet would not start the container`);
      const dir = join(this.dir, `${pod}-${mount.name}`);
      writeAtomically(dir, data);
      if (data['tls.crt'] && data['tls.key'] && data['ca.crt']) this.memberCertificate = { cert: data['tls.crt'], key: data['tls.key'], ca: data['ca.crt'] };
      mounted.push({ mountPath: mount.mountPath, dir });
      this.mountedSecrets.set(dir, secretName);
    }
    return mounted;
  }

  /**
   * What the kubelet does for a running pod every sync period: each mounted
   * Secret's files replaced by its current data, all at once (the atomic
   * writer's swap of the `..data` link), with no restart. Returns how many
   * mounts changed.
   */
  async refreshSecrets(): Promise<number> {
    let changed = 0;
    for (const [dir, secretName] of this.mountedSecrets) {
      const data = await this.secrets(secretName);
      if (!data) continue;
      if (writeAtomically(dir, data)) changed++;
      if (data['tls.crt'] && data['tls.key'] && data['ca.crt']) this.memberCertificate = { cert: data['tls.crt'], key: data['tls.key'], ca: data['ca.crt'] };
    }
    return changed;
  }

  /** Why a member's process is gone, if it is. */
  exited(pod: string): string | undefined {
    const member = this.members.get(pod);
    return member ? exitDescription(member.process, member.log) : undefined;
  }

  /** Sends a member's process a signal: SIGSTOP and SIGCONT pause and resume it, as a stalled disk or a long pause would. */
  signal(pod: string, signal: NodeJS.Signals): void {
    const process = this.members.get(pod)?.process;
    if (!process?.pid) throw new Error(`${pod} has no running process to send ${signal}`);
    process.kill(signal);
  }

  async stop(pod: string): Promise<void> {
    await terminate(this.members.get(pod)?.process);
    this.members.delete(pod);
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.members.keys()].map((pod) => this.stop(pod)));
  }
}

/**
 * A Secret volume's directory as the kubelet's atomic writer keeps it: the
 * keys' files are links through `..data` to a directory of this version,
 * and a new version replaces `..data` in one rename, so a reader sees the
 * old files or the new ones, never a new certificate with an old key.
 * Returns whether anything changed.
 */
function writeAtomically(dir: string, data: Readonly<Record<string, string>>): boolean {
  mkdirSync(dir, { recursive: true });
  const current = join(dir, '..data');
  const same = existsSync(current) && Object.entries(data).every(([key, value]) => existsSync(join(current, key)) && readFileSync(join(current, key)).equals(secretValueBytes(key, value)))
    && readdirSync(current).length === Object.keys(data).length;
  if (same) return false;
  const version = mkdtempSync(join(dir, '..version-'));
  for (const [key, value] of Object.entries(data)) writeFileSync(join(version, key), secretValueBytes(key, value), { mode: 0o600 });
  const previous = existsSync(current) ? readlinkSync(current) : undefined;
  symlinkSync(basename(version), join(dir, '..data_tmp'));
  renameSync(join(dir, '..data_tmp'), current);
  for (const key of Object.keys(data)) if (!existsSync(join(dir, key))) symlinkSync(join('..data', key), join(dir, key));
  if (previous) rmSync(join(dir, previous), { recursive: true, force: true });
  return true;
}

export const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** The client certificate each https member is called with (by origin), registered by trustClient. */
const clientAgents = new Map<string, Agent>();
/** Every LocalEtcdCluster of the test: an https member without a registered certificate is called with its cluster's (clientTls). */
const clusters = new Set<LocalEtcdCluster>();

/** Where a membership client of a LocalEtcdCluster finds a client certificate when it calls (the members' once they started). */
export const memberClientTls = (cluster: LocalEtcdCluster) => (): EtcdClientTls | undefined => cluster.clientTls();

/** From now on, etcdPost calls the members at these https URLs with this client certificate. */
export function trustClient(urls: readonly string[], tls: EtcdClientTls): void {
  const agent = tlsAgent(tls);
  for (const url of urls) clientAgents.set(new URL(url).origin, agent);
}

/** One call to a member's v3 HTTP/JSON API (over TLS with the registered client certificate for an https member). */
export async function etcdPost<T = any>(clientUrl: string, path: string, body: unknown, timeoutMs = 5000): Promise<T> {
  let status: number;
  let text: string;
  if (clientUrl.startsWith('https:')) {
    const origin = new URL(clientUrl).origin;
    const fromCluster = [...clusters].find((c) => c.serves(origin))?.clientTls();
    const agent = clientAgents.get(origin) ?? (fromCluster && tlsAgent(fromCluster));
    if (!agent) throw new Error(`${clientUrl}: no client certificate registered (trustClient)`);
    ({ status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = httpsRequest(clientUrl + path, { method: 'POST', agent, signal: AbortSignal.timeout(timeoutMs) }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(JSON.stringify(body));
    }));
  } else {
    const response = await fetch(clientUrl + path, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs) });
    status = response.status;
    text = await response.text();
  }
  if (status < 200 || status >= 300) throw new Error(`${path}: ${status} ${text}`);
  return JSON.parse(text) as T;
}

/**
 * A cluster's three TLS Secrets, issued as the controller issues them, by
 * name (config.tls), decoded: what a LocalEtcdCluster's SecretReader serves.
 */
export async function issueTestSecrets(name: string, namespace: string, now = new Date()): Promise<{ secrets: Map<string, Record<string, string>>; client: EtcdClientTls }> {
  const config = loadDefaultConfig();
  const identity = clusterIdentity(name, config);
  const issued = await issueClusterCertificates({ identity, namespace, config, now }, { member: true, client: true });
  const names = tlsSecretNames(config, identity);
  const client = leafSecretData(issued.client!, issued.authority, issued.issuer);
  return {
    secrets: new Map<string, Record<string, string>>([
      [names.authority, { ...authoritySecretData(issued.authority, issued.issuer) }],
      [names.member, { ...leafSecretData(issued.member!, issued.authority, issued.issuer), [REVOCATION_LIST_KEY]: await revocationListData(issued.authority, [], now, config) }],
      [names.client, { ...client }],
    ]),
    client: { ca: client['ca.crt'], cert: client['tls.crt'], key: client['tls.key'] },
  };
}

/** `count` keys `orders/00000`, … with values `order 0`, …, 100 per transaction (etcd allows 128 operations in one). */
export async function writeOrders(clientUrl: string, count: number): Promise<void> {
  for (let i = 0; i < count; i += 100) {
    const success = Array.from({ length: Math.min(100, count - i) }, (_, j) => ({ requestPut: { key: b64(`orders/${String(i + j).padStart(5, '0')}`), value: b64(`order ${i + j}`) } }));
    await etcdPost(clientUrl, '/v3/kv/txn', { success });
  }
}

/** How many `orders/` keys a member serves. */
export async function countOrders(clientUrl: string): Promise<number> {
  return Number((await etcdPost(clientUrl, '/v3/kv/range', { key: b64('orders/'), range_end: b64('orders0'), count_only: true })).count);
}

/**
 * A new cluster `kv` of `size` members in namespace `namespace` (and `spec`'s other fields), started from
 * the generated StatefulSet, member ConfigMap and (TLS being on by default) the TLS Secrets as the
 * controller issues them, every member ready (what the readiness probe asks), and the membership
 * interface pointed at it with the client certificate (etcdPost uses it too).
 */
export async function startLocalEtcdCluster(
  size: number, binDir: string, dir: string, namespace = 'shop', spec: Record<string, unknown> = {},
): Promise<{ cluster: LocalEtcdCluster; pods: string[]; membership: EtcdMembership; client: EtcdClientTls; secrets: Map<string, Record<string, string>> }> {
  const objects = synth({ name: 'kv', namespace, size, image: 'registry.k8s.io/etcd:3.6.8-0', ...spec });
  const { statefulSet } = byRole(objects);
  const configMaps = async (name: string) => objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === name)!.data as Record<string, string>;
  const { secrets, client } = await issueTestSecrets('kv', namespace);
  const cluster = new LocalEtcdCluster(statefulSet as unknown as StatefulSetLike, namespace, binDir, dir, configMaps, async (name) => secrets.get(name));
  const pods = Array.from({ length: size }, (_, i) => `kv-${i}`);
  for (let i = 0; i < size; i++) await cluster.start(i);
  const someoneExited = () => pods.map((p) => cluster.exited(p)).find(Boolean);
  await eventually(`${size} member(s) ready`, async () => {
    for (const pod of pods) if ((await httpProbe(`${(await cluster.address(pod)).metricsUrl}/readyz`)).status !== 200) return undefined;
    return true;
  }, 60_000, 100, someoneExited);
  const addresses = new Map(await Promise.all(pods.map(async (p) => [p, (await cluster.address(p)).clientUrl] as const)));
  trustClient([...addresses.values()], client);
  const membership = new EtcdMembership(() => [...addresses.keys()], (pod) => addresses.get(pod)!, 3000, undefined, client);
  return { cluster, pods, membership, client, secrets };
}

/**
 * The identity in Secret `name` as a process that mounts the Secret loads it
 * (the backup runner: every key a file in `dir`, read by
 * clientTlsFromDirectory, root's username and password included); undefined
 * while the Secret does not exist.
 */
export async function mountedIdentity(read: SecretReader, name: string, dir: string): Promise<EtcdClientTls | undefined> {
  const data = await read(name);
  if (!data) return undefined;
  for (const [file, value] of Object.entries(data)) writeFileSync(join(dir, file), value);
  return clientTlsFromDirectory(dir);
}

/** The Secrets of a namespace as the kubelet reads them (decoded), from the API server: a LocalEtcdCluster's SecretReader. */
export function apiServerSecrets(client: KubeClient, namespace: string): SecretReader {
  return async (name) => {
    try {
      const secret = await client.request<{ data?: Record<string, string> }>('GET', resourcePath('v1', 'Secret', namespace, name));
      return decodeSecretData(secret.data);
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) return undefined;
      throw e;
    }
  };
}

/** The client certificate the controller issued for cluster `name` (its client Secret, config.tls.clientSecret), once it exists. */
export async function issuedClientTls(client: KubeClient, namespace: string, name: string): Promise<EtcdClientTls> {
  const secretName = tlsSecretNames(loadDefaultConfig(), { name }).client;
  const data = await eventually(`the client Secret ${secretName}`, () => apiServerSecrets(client, namespace)(secretName), 30_000, 200);
  return { ca: data['ca.crt'], cert: data['tls.crt'], key: data['tls.key'] };
}
