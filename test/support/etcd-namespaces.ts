/**
 * Namespaces whose DistributedKV `kv` runs as real etcd members: each has
 * the backup runner's credentials Secret (for the test S3 server) and a
 * test-side kubelet (etcd-kubelet.ts) that runs the pods' init containers
 * and members. Shared by the tests that need a controller, real members and
 * S3 together (restore, scheduled backups).
 */
import { decodeSecretData } from '../../engines/etcd/secret-data.js';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadDefaultConfig, type GeneratorConfig } from '../../api/config.js';
import { KubeApiError, KubeClient, resourcePath } from '../../kube/client.js';
import { createLogger } from '../../kube/log.js';
import { Controller, type ControllerOptions } from '../../reconciler/core/controller.js';
import type { MemberAddresses } from '../../reconciler/day2/member-addresses.js';
import { locateBinaries } from '../cluster/control-plane.js';
import { createNamespace } from '../cluster/kube.js';
import { byRole, synth } from '../generator/support.js';
import { EtcdKubelet } from './etcd-kubelet.js';
import { LocalEtcdCluster } from './etcd-members.js';
import { eventually } from './eventually.js';
import { backupTools, S3_ACCESS_KEY, S3_SECRET_KEY, type S3Server } from './s3-server.js';

export const NAME = 'kv';
export const IMAGE = 'registry.k8s.io/etcd:3.6.8-0';
/** Every member a cluster can have: addresses are allocated for all, so a runner asking each ordinal in turn finds them. */
export const PODS = Array.from({ length: 9 }, (_, i) => `${NAME}-${i}`);

/** The default configuration (the etcd engine) with backups going to the test S3 server. */
export function configWithS3(s3: S3Server, backup: Partial<GeneratorConfig['backup']> = {}): GeneratorConfig {
  const defaults = loadDefaultConfig();
  return { ...defaults, backup: { ...defaults.backup, s3: { ...defaults.backup.s3, endpoint: s3.endpoint, forcePathStyle: true, partSizeMiB: 5 }, ...backup } };
}

export interface RunningController {
  readonly controller: Controller;
  /** Stops the controller and closes its client. */
  stop(): Promise<void>;
}

export class EtcdNamespaces {
  private readonly members = new Map<string, { cluster: LocalEtcdCluster; kubelet: EtcdKubelet }>();

  constructor(private readonly client: KubeClient, private readonly config: GeneratorConfig, private readonly dir: string) {}

  async add(prefix: string): Promise<string> {
    const { client, config } = this;
    const namespace = await createNamespace(client, prefix);
    await client.request('POST', `/api/v1/namespaces/${namespace}/secrets`, {
      body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: config.backup.runner.credentialsSecret }, stringData: { AWS_ACCESS_KEY_ID: S3_ACCESS_KEY, AWS_SECRET_ACCESS_KEY: S3_SECRET_KEY } },
    });
    await this.run(namespace);
    return namespace;
  }

  /** Starts running the members of `kv` in a namespace (again, after stop: new processes, the same volumes). */
  async run(namespace: string): Promise<void> {
    const { client, config } = this;
    const { statefulSet } = byRole(synth({ name: NAME, namespace, size: 3 }, config));
    const configMaps = async (name: string) => (await client.request('GET', resourcePath('v1', 'ConfigMap', namespace, name))).data;
    const secrets = async (name: string) => {
      const secret = await client.request('GET', `/api/v1/namespaces/${namespace}/secrets/${name}`).catch((e) => {
        if (e instanceof KubeApiError && e.status === 404) return undefined;
        throw e;
      });
      // The CRL (crl.der) is bytes, not text: decoded as the controller decodes it (secret-data.ts).
      return secret && decodeSecretData(secret.data as Record<string, string>);
    };
    const cluster = new LocalEtcdCluster(statefulSet, namespace, locateBinaries(['etcd']), this.volumes(namespace), configMaps, secrets, [backupTools()]);
    for (const pod of PODS) await cluster.address(pod);
    const kubelet = new EtcdKubelet(client, namespace, NAME, cluster);
    kubelet.start();
    this.members.set(namespace, { cluster, kubelet });
  }

  /** Where a namespace's volumes (and logs) are: a claim's volume is `<pod>-<claim uid>` in it. */
  volumes(namespace: string): string {
    return join(this.dir, namespace);
  }

  clientUrl(namespace: string, pod: string): string {
    return this.of(namespace).cluster.addressOf(pod).clientUrl;
  }

  kubelet(namespace: string): EtcdKubelet {
    return this.of(namespace).kubelet;
  }

  /** For the controller: where each namespace's members listen. */
  readonly addresses: MemberAddresses = {
    client: (namespace, pod) => this.clientUrl(namespace, pod),
    peer: (namespace, pod) => this.of(namespace).cluster.addressOf(pod).peerUrl,
  };

  /**
   * A controller over every namespace, with a client of its own, reaching the
   * members through `addresses`, with the test S3 server's credentials (as its
   * Deployment gets them from the Secret); caches synced and leading.
   */
  async startController(kubeconfigPath: string, config: GeneratorConfig): Promise<RunningController> {
    const client = KubeClient.fromKubeconfig(kubeconfigPath);
    const options: ControllerOptions = {
      client, config, log: createLogger(process.env.DKV_TEST_LOG_LEVEL ?? 'silent'), workers: 2,
      backoff: { baseMs: 500, maxMs: 3000 }, memberAddresses: this.addresses, memberTimeoutMs: 1000,
      s3Credentials: { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY },
    };
    const controller = new Controller(options);
    await controller.startCaches();
    await controller.startWorkers();
    return {
      controller,
      stop: async () => {
        await controller.stop();
        client.close();
      },
    };
  }

  /** `--member pod=url` for every ordinal: what cluster DNS gives a runner inside the cluster. */
  /**
   * The cluster's client Secret (issued by the controller) written out as the
   * backup CronJob mounts it: the directory to give `dkv backup` as DKV_TLS_DIR.
   */
  async clientTlsDir(namespace: string): Promise<string> {
    const secret = await eventually('the client Secret', async () => (await this.client.request('GET', `/api/v1/namespaces/${namespace}/secrets/${NAME}-tls-client`).catch(() => undefined)), 30_000, 200);
    const dir = join(this.volumes(namespace), 'client-tls');
    mkdirSync(dir, { recursive: true });
    for (const [k, v] of Object.entries(secret.data as Record<string, string>)) writeFileSync(join(dir, k), Buffer.from(v, 'base64'), { mode: 0o600 });
    return dir;
  }

  memberArgs(namespace: string): string[] {
    return PODS.flatMap((pod) => ['--member', `${pod}=${this.clientUrl(namespace, pod)}`]);
  }

  /**
   * Waits until the cluster reports `size` healthy voting members and no
   * scaling under way; gives up at once, saying why, when a member cannot
   * start (the kubelet loop's errors, a failed init container's output).
   */
  healthy(namespace: string, size: number, statusPath: string): Promise<any> {
    return eventually(`${namespace}: ${size} healthy voting members`, async () => {
      const cr = await this.client.request('GET', statusPath);
      const voting = (cr.status?.members ?? []).filter((m: any) => m.role !== 'learner' && m.healthy);
      const scaling = cr.status?.conditions?.find((c: any) => c.type === 'Scaling');
      return voting.length === size && cr.status.members.length === size && scaling?.status === 'False' ? cr : undefined;
    }, 120_000, 200, () => {
      const { kubelet } = this.of(namespace);
      const failedInit = kubelet.initRuns.find((r) => r.code !== 0);
      if (failedInit) return `${failedInit.pod}'s ${failedInit.container} exited ${failedInit.code}: ${readFileSync(failedInit.log, 'utf8').slice(-2000)}`;
      return kubelet.errors.length > 0 ? kubelet.errors.join('; ') : undefined;
    });
  }

  /** Stops one namespace's members (its cluster was deleted), or all. */
  async stop(namespace?: string): Promise<void> {
    for (const [ns, { kubelet }] of this.members) if (!namespace || ns === namespace) await kubelet.stop();
  }

  private of(namespace: string): { cluster: LocalEtcdCluster; kubelet: EtcdKubelet } {
    const found = this.members.get(namespace);
    if (!found) throw new Error(`no members in namespace ${namespace}`);
    return found;
  }
}
