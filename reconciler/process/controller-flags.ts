/**
 * `dkv controller`'s flags, parsed and checked before anything starts: a
 * value that would silently change behaviour (`--leader-elect yes` turning
 * election off, `--resync-minutes 0` resyncing in a hot loop) is a usage
 * error naming the flag.
 */
import { parseArgs } from 'node:util';

export const CONTROLLER_USAGE = `usage: dkv controller [options]
  --kubeconfig <file>             default: the files of $KUBECONFIG (merged as kubectl does), ~/.kube/config,
                                  or, only when none of these is set or exists, the pod's service account
  --config <file>                 generator/controller configuration (default: the bundled dkv.config.yaml)
  --namespace <ns>                watch one namespace (default: all)
  --workers <n>                   parallel reconciles, at least 1 (default 4)
  --resync-minutes <n>            full resync period, more than 0 (default 10)
  --health-addr <host:port>       /healthz, /readyz, /metrics (default 0.0.0.0:8080; port 0 = any free port)
  --leader-elect <true|false>     default true
  --leader-election-namespace <ns> default: $POD_NAMESPACE or "default"
  --identity <id>                 leader election identity (default: hostname-pid)
  --lease-duration-ms, --renew-deadline-ms, --retry-period-ms   default 15000 / 10000 / 2000
  --backoff-base-ms, --backoff-max-ms                           failed reconcile retry: default 2000 / 300000
  --webhook-addr <host:port|off>  the conversion webhook between API versions, on every replica
                                  (default 0.0.0.0:<configuration conversion.port>; off: not served,
                                  so v1alpha1 clients fail while v1beta1 ones work)
  --fleet-kubeconfig <file>       fleet mode: the coordination API server holding the fleet lock (configuration
                                  fleet.leaseName); only its holder's cluster runs backups and exports, the
                                  others report Standby (lock timings: twice the --lease-duration-ms ... flags)
  --fleet-member <name>           this Kubernetes cluster's name in the fleet (required with --fleet-kubeconfig)
  --shards <off|auto>             off (default): one leader reconciles every cluster, the other replicas wait.
                                  auto: every replica reconciles a share (configuration sharding; one Lease
                                  each, named after --identity, in the leader election namespace); the
                                  leader still runs the definitions export and the storage migration.
                                  Switch when one replica's memory or reconcile rate is the limit: from a few
                                  thousand clusters, or when a waiting standby is a replica wasted
  --migrate-storage <true|false>  the leader rewrites every DistributedKV in the storage version and
                                  narrows the CRD's storedVersions (default true, but never with --namespace:
                                  then run dkv migrate with cluster-wide rights)`;

export interface ControllerFlags {
  readonly help: boolean;
  readonly kubeconfig?: string;
  readonly config?: string;
  readonly namespace?: string;
  readonly workers: number;
  readonly resyncMs: number;
  readonly healthHost: string;
  readonly healthPort: number;
  readonly leaderElect: boolean;
  readonly leaderElectionNamespace?: string;
  readonly identity?: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
  /** Undefined: the configuration's port on every interface. Null: not served. */
  readonly webhook: { readonly host: string; readonly port?: number } | null;
  readonly migrateStorage: boolean;
  /** Every replica reconciles a share of the clusters (reconciler/process/main.ts, kube/shard-membership.ts). */
  readonly shards: boolean;
  /** Fleet mode: the coordination API server's kubeconfig and this cluster's name. */
  readonly fleet?: { readonly kubeconfig: string; readonly member: string };
}

/** A flag with a value it cannot take. */
export class UsageError extends Error {
  constructor(flag: string, message: string, value: string) {
    super(`--${flag}: ${message} (got ${JSON.stringify(value)})`);
    this.name = 'UsageError';
  }
}

export function parseControllerFlags(args: readonly string[]): ControllerFlags {
  const { values } = parseArgs({
    args: [...args],
    options: {
      kubeconfig: { type: 'string' }, config: { type: 'string' }, namespace: { type: 'string' }, workers: { type: 'string' },
      'resync-minutes': { type: 'string' }, 'health-addr': { type: 'string' }, 'leader-elect': { type: 'string' },
      'leader-election-namespace': { type: 'string' }, identity: { type: 'string' },
      'lease-duration-ms': { type: 'string' }, 'renew-deadline-ms': { type: 'string' }, 'retry-period-ms': { type: 'string' },
      'backoff-base-ms': { type: 'string' }, 'backoff-max-ms': { type: 'string' }, help: { type: 'boolean' },
      'webhook-addr': { type: 'string' }, 'migrate-storage': { type: 'string' }, 'fleet-kubeconfig': { type: 'string' }, 'fleet-member': { type: 'string' },
      shards: { type: 'string' },
    },
  });
  const number = (flag: keyof typeof values, fallback: number, { min, integer = false, exclusive = false }: { min: number; integer?: boolean; exclusive?: boolean }): number => {
    const value = values[flag] as string | undefined;
    if (value === undefined) return fallback;
    const n = Number(value);
    const what = `${integer ? 'an integer' : 'a number'} ${exclusive ? 'greater than' : 'at least'} ${min}`;
    if (value.trim() === '' || !Number.isFinite(n) || (integer && !Number.isInteger(n)) || (exclusive ? n <= min : n < min)) throw new UsageError(flag, `must be ${what}`, value);
    return n;
  };
  const boolean = (flag: 'leader-elect' | 'migrate-storage'): boolean => {
    const value = values[flag] ?? 'true';
    if (value !== 'true' && value !== 'false') throw new UsageError(flag, 'must be true or false', value);
    return value === 'true';
  };
  const address = values['health-addr'] ?? '0.0.0.0:8080';
  const [healthHost, healthPort] = address.split(/:(?=\d+$)/);
  if (healthPort === undefined || Number(healthPort) > 65535) throw new UsageError('health-addr', 'must be <host>:<port>', address);
  const webhookAddress = values['webhook-addr'];
  let webhook: ControllerFlags['webhook'] = { host: '0.0.0.0' };
  if (webhookAddress === 'off') webhook = null;
  else if (webhookAddress !== undefined) {
    const [host, port] = webhookAddress.split(/:(?=\d+$)/);
    if (port === undefined || Number(port) > 65535) throw new UsageError('webhook-addr', 'must be <host>:<port> or off', webhookAddress);
    webhook = { host, port: Number(port) };
  }
  const fleetKubeconfig = values['fleet-kubeconfig'];
  const fleetMember = values['fleet-member'];
  if (fleetKubeconfig !== undefined && !fleetMember) throw new UsageError('fleet-member', 'is required with --fleet-kubeconfig: this cluster\'s name in the fleet', fleetMember ?? '');
  if (fleetMember !== undefined && !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(fleetMember)) throw new UsageError('fleet-member', 'must be a DNS-1123 subdomain', fleetMember);
  if (fleetMember !== undefined && fleetKubeconfig === undefined) throw new UsageError('fleet-kubeconfig', 'is required with --fleet-member', '');
  const shards = values.shards ?? 'off';
  if (shards !== 'off' && shards !== 'auto') throw new UsageError('shards', 'must be off or auto', shards);
  // Fleet fencing suspends every backup CronJob of the cluster from the cache, which a shard holds a part of.
  if (shards === 'auto' && fleetKubeconfig !== undefined) throw new UsageError('shards', 'cannot be combined with fleet mode (--fleet-kubeconfig) yet', shards);
  return {
    help: values.help ?? false,
    shards: shards === 'auto',
    kubeconfig: values.kubeconfig,
    config: values.config,
    namespace: values.namespace,
    workers: number('workers', 4, { min: 1, integer: true }),
    resyncMs: number('resync-minutes', 10, { min: 0, exclusive: true }) * 60_000,
    healthHost,
    healthPort: Number(healthPort),
    leaderElect: boolean('leader-elect'),
    leaderElectionNamespace: values['leader-election-namespace'],
    identity: values.identity,
    leaseDurationMs: number('lease-duration-ms', 15_000, { min: 1, integer: true }),
    renewDeadlineMs: number('renew-deadline-ms', 10_000, { min: 1, integer: true }),
    retryPeriodMs: number('retry-period-ms', 2_000, { min: 1, integer: true }),
    backoffBaseMs: number('backoff-base-ms', 2_000, { min: 1 }),
    backoffMaxMs: number('backoff-max-ms', 300_000, { min: 1 }),
    webhook,
    migrateStorage: boolean('migrate-storage'),
    fleet: fleetKubeconfig !== undefined && fleetMember ? { kubeconfig: fleetKubeconfig, member: fleetMember } : undefined,
  };
}
