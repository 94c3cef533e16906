/**
 * `dkv controller`: runs the reconciler in (or against) a cluster.
 * Caches sync at once on every replica; only the Lease holder reconciles.
 */
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { loadCheckedConfig } from '../constructs/config-check.js';
import { Controller } from './controller.js';
import { startHealthServer } from './health-server.js';
import { KubeClient } from './kube-client.js';
import { LeaderElector } from './leader.js';
import { createLogger } from './log.js';

const USAGE = `usage: dkv controller [options]
  --kubeconfig <file>             default: $KUBECONFIG, ~/.kube/config, or in-cluster
  --config <file>                 generator/controller configuration (default: the bundled dkv.config.yaml)
  --namespace <ns>                watch one namespace (default: all)
  --workers <n>                   parallel reconciles (default 4)
  --resync-minutes <n>            full resync period (default 10)
  --health-addr <host:port>       /healthz, /readyz, /metrics (default 0.0.0.0:8080; port 0 = any free port)
  --leader-elect <true|false>     default true
  --leader-election-namespace <ns> default: $POD_NAMESPACE or "default"
  --identity <id>                 leader election identity (default: hostname-pid)
  --lease-duration-ms, --renew-deadline-ms, --retry-period-ms   default 15000 / 10000 / 2000
  --backoff-base-ms, --backoff-max-ms                           failed reconcile retry: default 2000 / 300000`;

export async function runController(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      kubeconfig: { type: 'string' }, config: { type: 'string' }, namespace: { type: 'string' }, workers: { type: 'string' },
      'resync-minutes': { type: 'string' }, 'health-addr': { type: 'string' }, 'leader-elect': { type: 'string' },
      'leader-election-namespace': { type: 'string' }, identity: { type: 'string' },
      'lease-duration-ms': { type: 'string' }, 'renew-deadline-ms': { type: 'string' }, 'retry-period-ms': { type: 'string' },
      'backoff-base-ms': { type: 'string' }, 'backoff-max-ms': { type: 'string' }, help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const number = (name: string, value: string | undefined, fallback: number): number => {
    if (value === undefined) return fallback;
    const n = Number(value);
    if (!Number.isFinite(n) || n < 0) throw new Error(`--${name}: must be a non-negative number (got ${JSON.stringify(value)})`);
    return n;
  };
  const log = createLogger();
  const config = loadCheckedConfig(values.config);
  const client = KubeClient.fromKubeconfig(values.kubeconfig ?? process.env.KUBECONFIG);
  const controller = new Controller({
    client, config, log, namespace: values.namespace,
    workers: number('workers', values.workers, 4),
    resyncMs: number('resync-minutes', values['resync-minutes'], 10) * 60_000,
    backoff: { baseMs: number('backoff-base-ms', values['backoff-base-ms'], 2000), maxMs: number('backoff-max-ms', values['backoff-max-ms'], 300_000) },
  });
  const [host, port] = (values['health-addr'] ?? '0.0.0.0:8080').split(/:(?=\d+$)/);
  const health = await startHealthServer({ host, port: Number(port), registry: controller.metrics.registry, ready: () => controller.cachesSynced, live: () => controller.watchLiveness() });
  log.info({ healthPort: health.port, server: client.server }, 'serving /healthz, /readyz and /metrics');

  await controller.startCaches();
  log.info({ clusters: controller.clusters.size }, 'caches synced');

  const identity = values.identity ?? `${hostname()}-${process.pid}`;
  let elector: LeaderElector | undefined;
  let exitCode = 0;
  let lostLeadership: () => void = () => undefined;
  if ((values['leader-elect'] ?? 'true') === 'true') {
    elector = new LeaderElector({
      client, identity, name: config.controller.leaseName,
      namespace: values['leader-election-namespace'] ?? process.env.POD_NAMESPACE ?? 'default',
      leaseDurationMs: number('lease-duration-ms', values['lease-duration-ms'], 15_000),
      renewDeadlineMs: number('renew-deadline-ms', values['renew-deadline-ms'], 10_000),
      retryPeriodMs: number('retry-period-ms', values['retry-period-ms'], 2_000),
      onStartedLeading: () => {
        log.info({ identity }, 'became leader: reconciling');
        controller.startWorkers();
      },
      onStoppedLeading: () => {
        // As controller-runtime does: a replica that lost the Lease stops writing at once (the
        // term's requests are cut off) and exits, so its pod restarts as a fresh candidate.
        log.warn({ identity }, 'lost leadership: stopped reconciling, exiting');
        void controller.stopWorkers();
        lostLeadership();
      },
      log: (event, fields) => log.info({ identity, ...fields }, event),
    });
    elector.start();
  } else {
    controller.startWorkers();
  }

  await new Promise<void>((resolve) => {
    lostLeadership = () => {
      exitCode = 1;
      resolve();
    };
    const shutdown = (signal: string) => {
      log.info({ signal }, 'shutting down: finishing in-flight reconciles');
      resolve();
    };
    process.once('SIGTERM', () => shutdown('SIGTERM'));
    process.once('SIGINT', () => shutdown('SIGINT'));
  });
  // Finish in-flight work, then hand the Lease over so a successor need not wait for it to expire.
  await controller.stopWorkers();
  await elector?.stop();
  await controller.stop();
  await health.close();
  client.close();
  log.info({ exitCode }, 'stopped');
  return exitCode;
}
