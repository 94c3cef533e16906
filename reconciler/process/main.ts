/**
 * `dkv controller`: runs the reconciler in (or against) a cluster.
 * Caches sync at once on every replica; only the Lease holder reconciles,
 * or (`--shards auto`) every replica reconciles its share.
 */
import { hostname } from 'node:os';
import { ConversionService } from '../../conversion/conversion-service.js';
import { FleetLock } from '../fleet/fleet-lock.js';
import { loadCheckedConfig } from '../../constructs/config-check.js';
import { Controller } from '../core/controller.js';
import { CONTROLLER_USAGE, parseControllerFlags } from './controller-flags.js';
import { boundHeapGrowth } from '../memory/heap-growth.js';
import { startHealthServer } from './health-server.js';
import { KubeClient } from '../../kube/client.js';
import { realClock } from '../../kube/clock.js';
import { LeaderElector } from '../../kube/leader.js';
import { bucketKey, bucketKeyOwner, bucketsOwnedBy } from '../../kube/shard-buckets.js';
import { ShardMembership } from '../../kube/shard-membership.js';
import { createLogger } from '../../kube/log.js';

/**
 * The fleet lock's timings: twice the local leader Lease's. A controller that
 * crashes while its cluster is active cannot fence its own backups; its
 * cluster's next local leader does, as it starts standing by, after at most
 * the local lease and a retry. The other cluster may take the fleet lock only
 * a fleet lease after the last renewal it saw: with twice the local timings
 * that is later, provided the lease is over 3.2 retry periods (the defaults,
 * 15 s and 2 s, leave 8 s to spare). Run two replicas (the install bundle's
 * default), or a crashed one leaves no successor to fence.
 */
export function fleetLockTimings(flags: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number }): { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number } {
  return { leaseDurationMs: 2 * flags.leaseDurationMs, renewDeadlineMs: 2 * flags.renewDeadlineMs, retryPeriodMs: 2 * flags.retryPeriodMs };
}

export async function runController(args: string[]): Promise<number> {
  const flags = parseControllerFlags(args);
  if (flags.help) {
    process.stdout.write(CONTROLLER_USAGE + '\n');
    return 0;
  }
  boundHeapGrowth();
  const log = createLogger();
  const config = loadCheckedConfig(flags.config);
  const client = KubeClient.fromKubeconfig(flags.kubeconfig);
  const identity = flags.identity ?? `${hostname()}-${process.pid}`;
  const leaseNamespace = flags.leaderElectionNamespace ?? process.env.POD_NAMESPACE ?? 'default';
  let membership: ShardMembership | undefined;
  const controller = new Controller({
    client, config, log, namespace: flags.namespace, workers: flags.workers, resyncMs: flags.resyncMs,
    backoff: { baseMs: flags.backoffBaseMs, maxMs: flags.backoffMaxMs },
    sharding: flags.shards ? { mayWork: (bucket) => membership?.mayWork(bucketKey(bucket)) ?? false, retryMs: flags.retryPeriodMs } : undefined,
  });
  const health = await startHealthServer({
    host: flags.healthHost, port: flags.healthPort, registry: controller.metrics.registry,
    ready: () => controller.cachesSynced, live: () => controller.watchLiveness(),
  });
  log.info('serving /healthz, /readyz and /metrics', { healthPort: health.port, server: client.server });

  // Every replica converts between API versions (a conversion writes nothing); only the leader migrates.
  const ownNamespace = flags.leaderElectionNamespace ?? process.env.POD_NAMESPACE ?? config.conversion.serviceNamespace;
  const conversion = flags.webhook === null ? undefined : new ConversionService({
    client, config, log, clock: realClock, namespace: ownNamespace, host: flags.webhook.host, port: flags.webhook.port ?? config.conversion.port,
    observe: (seconds, ok) => controller.metrics.observeConversion(seconds, ok),
  });
  void conversion?.start();
  if (flags.migrateStorage && flags.namespace !== undefined) {
    log.info('storage version migration left to dkv migrate: this controller watches one namespace and may not rewrite the others', { namespace: flags.namespace });
  }
  // Fleet mode: the leader of each Kubernetes cluster competes for the fleet lock on the coordination API server.
  const fleetClient = flags.fleet ? KubeClient.fromKubeconfig(flags.fleet.kubeconfig) : undefined;
  if (flags.fleet && flags.leaseDurationMs <= 3.2 * flags.retryPeriodMs) {
    log.warn('fleet: the lease is too short for the retry period: a crashed controller\'s successor may not fence its backups before the other cluster takes over', { leaseDurationMs: flags.leaseDurationMs, retryPeriodMs: flags.retryPeriodMs });
  }
  let fleetLock: FleetLock | undefined;
  let term = new AbortController();
  const startTerm = () => {
    term = new AbortController();
    const signal = term.signal;
    // Migration rewrites every namespace's objects: a controller that watches one namespace has no rights beyond it.
    if (conversion && flags.migrateStorage && flags.namespace === undefined) void conversion.migrate(client.fenced(signal), () => signal.aborted);
    if (flags.shards) controller.startGlobalTasks(signal);
    if (flags.fleet && fleetClient) {
      fleetLock = new FleetLock({
        client: fleetClient, controller, member: flags.fleet.member, identity, name: config.fleet.leaseName, namespace: config.fleet.leaseNamespace,
        ...fleetLockTimings(flags), log,
      });
      void fleetLock.start();
    }
  };
  const endTerm = async () => {
    term.abort();
    const lock = fleetLock;
    fleetLock = undefined;
    await lock?.stop();
  };

  await controller.startCaches();
  log.info('caches synced', { clusters: controller.clusters.size });

  let elector: LeaderElector | undefined;
  let exitCode = 0;
  let lostLeadership: () => void = () => undefined;
  let shuttingDown = false;
  if (flags.shards) {
    // Every replica reconciles its share; a replica that can no longer renew its Lease stops at
    // once and exits (as one that lost leadership), before the others may take its buckets.
    membership = new ShardMembership({
      client, namespace: leaseNamespace, group: config.sharding.group, identity, clock: realClock, log,
      leaseDurationMs: flags.leaseDurationMs, renewDeadlineMs: flags.renewDeadlineMs, retryPeriodMs: flags.retryPeriodMs,
      owner: (key, members) => bucketKeyOwner(key, members, config.sharding.buckets),
      onView: (view) => controller.setShare(bucketsOwnedBy(identity, view.members, config.sharding.buckets)),
      onLost: () => {
        log.warn('shard: membership lost: stopped reconciling, exiting', { identity });
        void controller.stopWorkers();
        lostLeadership();
      },
    });
    log.info('sharded: reconciling a share of the clusters', { identity, group: config.sharding.group, buckets: config.sharding.buckets });
    void controller.startWorkers();
    membership.start();
  }
  if (flags.leaderElect) {
    elector = new LeaderElector({
      client, identity, name: config.controller.leaseName,
      namespace: leaseNamespace,
      leaseDurationMs: flags.leaseDurationMs,
      renewDeadlineMs: flags.renewDeadlineMs,
      retryPeriodMs: flags.retryPeriodMs,
      onStartedLeading: () => {
        log.info(flags.shards ? 'became leader: running the global tasks' : 'became leader: reconciling', { identity });
        startTerm();
        if (!flags.shards) void controller.startWorkers();
      },
      onStoppedLeading: () => {
        // As controller-runtime does: a replica that lost the Lease stops writing at once (the
        // term's requests are cut off) and exits, so its pod restarts as a fresh candidate.
        log.warn('lost leadership: stopped reconciling, exiting', { identity });
        void endTerm();
        void controller.stopWorkers();
        lostLeadership();
      },
      log,
    });
    elector.start();
  } else {
    startTerm();
    if (!flags.shards) void controller.startWorkers();
  }

  await new Promise<void>((resolve) => {
    lostLeadership = () => {
      if (shuttingDown) return; // releasing the Lease on shutdown is not losing it
      exitCode = 1;
      resolve();
    };
    const shutdown = (signal: string) => {
      shuttingDown = true;
      log.info('shutting down: finishing in-flight reconciles', { signal });
      resolve();
    };
    process.once('SIGTERM', () => shutdown('SIGTERM'));
    process.once('SIGINT', () => shutdown('SIGINT'));
  });
  // Finish in-flight work (a replica that lost the Lease has cut it off already), then hand
  // the Lease over so a successor need not wait for it to expire.
  shuttingDown = true;
  // The fleet lock first: it fences this cluster's backups, then frees the lock for the other cluster.
  await endTerm();
  await controller.stopWorkers(exitCode === 0 ? 'drain' : 'fence');
  // Freed only now that nothing of this replica runs: the others take its buckets at once.
  await membership?.stop();
  await elector?.stop();
  await conversion?.stop();
  fleetClient?.close();
  await controller.stop();
  await health.close();
  client.close();
  log.info('stopped', { exitCode });
  return exitCode;
}
