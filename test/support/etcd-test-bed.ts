/**
 * What every real-etcd scenario stands on, set up once: a test control
 * plane with kwok nodes and kube-controller-manager, the CRD, a namespace
 * of its own, the member processes (LocalEtcdCluster, an address reserved
 * for each pod the cluster may have) run by an EtcdKubelet, and the
 * controller in-process, scoped to the namespace and reaching the members
 * at their local addresses. The tests then create their DistributedKV and
 * judge what happens under an InvariantMonitor (`monitor()`).
 *
 * `controllerWrites` lists every write the controller sent, in order, from
 * its own client (the kubelet loop and kube-controller-manager write too):
 * a test that asserts a quiet cluster costs no write reads it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { customResourceDefinition } from '../../api/crd.js';
import { EtcdMembership } from '../../engines/etcd/membership.js';
import { KubeClient, resourcePath } from '../../kube/client.js';
import type { Clock } from '../../kube/clock.js';
import { createLogger } from '../../kube/log.js';
import type { GeneratorConfig } from '../../model/generator-config.js';
import { Controller } from '../../reconciler/core/controller.js';
import { locateBinaries, startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { createNamespace, eventually, installCrd } from '../cluster/kube.js';
import { clusterPath } from '../integration/controller-harness.js';
import { byRole, synth } from '../generator/support.js';
import { EtcdKubelet } from './etcd-kubelet.js';
import { apiServerSecrets, LocalEtcdCluster, memberClientTls } from './etcd-members.js';
import { InvariantMonitor } from './invariant-monitor.js';

export interface EtcdTestBedOptions {
  readonly config: GeneratorConfig;
  /** The DistributedKV's (and so the StatefulSet's) name. */
  readonly name: string;
  /** The namespace's prefix and the temporary directory's (member data and logs). */
  readonly label: string;
  /** How many member pods the cluster may have at most: an address is reserved for each. */
  readonly maxMembers: number;
  /** Images the kubelet never starts (as an image that cannot be pulled). */
  readonly unrunnable?: (image: string) => boolean;
  /** How much of each write `controllerWrites` keeps. */
  readonly writeBodyChars?: number;
  /** Directories put on the members' containers' PATH (the recover init container's etcdutl). */
  readonly extraPath?: readonly string[];
  /** Keep the members' data directory (their etcd logs) after stop(), and say where. */
  readonly keepDirectory?: boolean;
  /** Swap the running members' mounted Secrets for their current data this often (a kubelet's sync); off by default. */
  readonly secretSyncMs?: number;
  /** More CRDs, established with the DistributedKV's before the controller starts (the Prometheus Operator's, say). */
  readonly crds?: readonly Record<string, any>[];
  /** The controller's clock (default the real one); startController(clock) gives a restarted controller another. */
  readonly clock?: Clock;
}

export class EtcdTestBed {
  readonly pods: readonly string[];
  /** Every write the controller sent: `METHOD path body`. */
  readonly controllerWrites: string[] = [];
  controller?: Controller;

  private constructor(
    readonly plane: ControlPlane,
    /** The test's own client. */
    readonly client: KubeClient,
    /** The controller's client, which records its writes. */
    readonly controllerClient: KubeClient,
    readonly namespace: string,
    /** Each member's data directory is below it (`<pod>-<claim uid>`). */
    readonly dir: string,
    readonly cluster: LocalEtcdCluster,
    readonly kubelet: EtcdKubelet,
    private readonly options: EtcdTestBedOptions,
  ) {
    this.pods = Array.from({ length: options.maxMembers }, (_, i) => `${options.name}-${i}`);
  }

  /** The plane, the CRD, the namespace, the members' kubelet and the controller, started. */
  static async start(options: EtcdTestBedOptions): Promise<EtcdTestBed> {
    const { config, name } = options;
    const plane = await startControlPlane(undefined, { withNodes: { crds: [customResourceDefinition(config) as Record<string, any>, ...(options.crds ?? [])] } });
    const client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
    const controllerClient = KubeClient.fromKubeconfig(plane.kubeconfigPath);
    await installCrd(client);
    const namespace = await createNamespace(client, options.label);
    const dir = mkdtempSync(join(tmpdir(), `dkv-${options.label}-`));
    const { statefulSet } = byRole(synth({ name, namespace, size: 3 }, config));
    // The Secrets the controller issues (TLS is on by default) are mounted from the API server, as a kubelet would.
    const cluster = new LocalEtcdCluster(
      statefulSet, namespace, locateBinaries(['etcd']), dir, async (configMap) => (await client.request('GET', resourcePath('v1', 'ConfigMap', namespace, configMap))).data,
      apiServerSecrets(client, namespace), options.extraPath,
    );
    const kubelet = new EtcdKubelet(client, namespace, name, cluster, options.unrunnable, { secretSyncMs: options.secretSyncMs });
    const bed = new EtcdTestBed(plane, client, controllerClient, namespace, dir, cluster, kubelet, options);
    const send = controllerClient.request.bind(controllerClient);
    controllerClient.request = (method, path, requestOptions) => {
      if (method !== 'GET') bed.controllerWrites.push(`${method} ${path} ${JSON.stringify(requestOptions?.body ?? null).slice(0, options.writeBodyChars ?? 2000)}`);
      return send(method, path, requestOptions);
    };
    for (const pod of bed.pods) await cluster.address(pod);
    kubelet.start();
    await bed.startController();
    return bed;
  }

  /**
   * A controller as `dkv controller` runs one, with retries from 200 ms so that failure scenarios stay fast;
   * `client` (the recording client by default) lets a test fence it, as a killed process would be.
   */
  async startController(clock: Clock | undefined = this.options.clock, client: KubeClient = this.controllerClient): Promise<void> {
    const { cluster } = this;
    this.controller = new Controller({
      ...(clock ? { clock } : {}),
      client, config: this.options.config, log: createLogger(process.env.DKV_TEST_LOG_LEVEL ?? 'silent'), namespace: this.namespace, workers: 2, backoff: { baseMs: 200, maxMs: 2000 },
      memberAddresses: { client: (_ns, pod) => cluster.addressOf(pod).clientUrl, peer: (_ns, pod) => cluster.addressOf(pod).peerUrl },
      memberTimeoutMs: 1000,
    });
    await this.controller.startCaches();
    await this.controller.startWorkers();
  }

  /**
   * The members as etcd's client API answers, read directly (not through the
   * controller): over TLS with the members' own certificate, read when it
   * calls (the members' Secrets exist only once the controller issued them),
   * at the scheme each member serves now, whatever the tests' clients use.
   */
  membership(pods: readonly string[] = this.pods): EtcdMembership {
    return new EtcdMembership(() => pods, (pod) => this.cluster.servingClientUrl(pod), 1000, undefined, memberClientTls(this.cluster));
  }

  /** The client URLs of the members whose processes run now: where a load's clients go. */
  runningClientUrls(): string[] {
    return this.pods.filter((p) => this.cluster.members.has(p)).map((p) => this.cluster.addressOf(p).clientUrl);
  }

  /**
   * Waits until the cluster reports `size` healthy voting members and a finished scaling, and the StatefulSet
   * agrees; its status and the kubelet's errors in the failure.
   */
  async settledAt(size: number, deadlineMs = 120_000): Promise<any> {
    const { client, namespace } = this;
    const name = this.options.name;
    const status = () => client.request('GET', clusterPath(namespace, name));
    return eventually(`${size} healthy voting members`, async () => {
      const cr = await status();
      const members = cr.status?.members ?? [];
      const voting = members.filter((m: any) => m.role !== 'learner' && m.healthy);
      const scaling = cr.status?.conditions?.find((c: any) => c.type === 'Scaling');
      if (members.length !== size || voting.length !== size || scaling?.status !== 'False') return undefined;
      const sts = await client.request('GET', resourcePath('apps/v1', 'StatefulSet', namespace, name));
      return sts.spec.replicas === size ? cr : undefined;
    }, deadlineMs, 200).catch(async (e: Error) => {
      const cr = await status();
      throw new Error(`${e.message}\nstatus: ${JSON.stringify({ members: cr.status?.members, conditions: cr.status?.conditions })}\nkubelet: ${this.kubelet.errors.join('; ')}`);
    });
  }

  /** An invariant monitor over the members (started by the test). */
  monitor(pods: readonly string[] = this.pods): InvariantMonitor {
    return new InvariantMonitor(this.membership(pods));
  }

  /** Events of the namespace with this reason: their messages, sorted. */
  async events(reason: string): Promise<string[]> {
    return (await this.client.request('GET', `/api/v1/namespaces/${this.namespace}/events`)).items.filter((e: any) => e.reason === reason).map((e: any) => e.message).sort();
  }

  async stop(): Promise<void> {
    await this.controller?.stop();
    await this.kubelet.stop();
    this.client.close();
    this.controllerClient.close();
    await this.plane.stop();
    if (this.options.keepDirectory) console.log(`member logs kept in ${this.dir}`);
    else rmSync(this.dir, { recursive: true, force: true });
  }
}
