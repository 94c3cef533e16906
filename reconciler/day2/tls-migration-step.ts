/**
 * The Day-2 step of a migration to TLS (engines/etcd/tls-migration.ts
 * decides, pure): read what it needs from the live StatefulSet, the cached
 * Secrets and the cluster's previous status (the grace period's clock: lost,
 * it only starts again, the safe way), and hand back which TLS the members
 * are rendered with, which scheme the controller reaches them by, which
 * certificates to issue, and what status.tls reports. The one membership
 * call of the Switching phase is made in the rolling restart
 * (membership-step.ts, gateSwitchingRestart).
 */
import type { DistributedKVSpec, DistributedKVStatus } from '../../imports/distributedkv.js';
import type { CachedObject } from '../../kube/informer.js';
import type { GeneratorConfig } from '../../model/generator-config.js';
import type { MemberStatus } from '../../engines/membership.js';
import { tlsAsked, tlsInEffect, type TlsInEffect } from '../../model/tls.js';
import { liveTlsOf } from '../../engines/etcd/tls-files.js';
import { decideTlsMigration, templateTls, type TlsMigrationStep } from '../../engines/etcd/tls-migration.js';

export type TlsStatus = NonNullable<DistributedKVStatus['tls']>;

export interface TlsPlan {
  /** What the members' template renders. */
  readonly render: TlsInEffect;
  /** How the controller reaches the members (the scheme of their client URLs). */
  readonly reach: TlsInEffect;
  /** What the certificates are issued for (tls-step.ts): the migration's target while one is under way. */
  readonly issue: TlsInEffect;
  readonly migration?: TlsMigrationStep;
}

export interface TlsMigrationReader {
  readonly spec: Pick<DistributedKVSpec, 'tls'>;
  readonly config: Pick<GeneratorConfig, 'tls'>;
  /** The cluster's own StatefulSet, from the cache. */
  readonly statefulSet?: CachedObject;
  /** The members' Secret and the CA's exist (in the cache, before this reconcile issues any) and are usable (tls-step.ts found no problem). */
  readonly certificatesIssued: boolean;
  readonly previous?: DistributedKVStatus;
  readonly now: number;
  /** A NetworkPolicy of the cluster exists (the cache shows it): who reaches the members is restricted. */
  readonly networkPolicyInForce: boolean;
}

const templateArgs = (statefulSet: CachedObject | undefined): readonly string[] | undefined =>
  (statefulSet?.spec as { template?: { spec?: { containers?: { args?: string[] }[] } } } | undefined)?.template?.spec?.containers?.[0]?.args;

/** Every pod runs the live template: the StatefulSet controller saw it and counts every replica updated. */
function rolledOut(statefulSet: CachedObject): boolean {
  const sts = statefulSet as CachedObject & { spec?: { replicas?: number }; status?: { observedGeneration?: number; updatedReplicas?: number } };
  return (sts.status?.observedGeneration ?? 0) >= (sts.metadata.generation ?? 0) && (sts.status?.updatedReplicas ?? 0) >= (sts.spec?.replicas ?? 1);
}

/** The migration's decision from the live objects; `members` when the membership step has read them (for the report). */
export function tlsMigration(read: TlsMigrationReader, members?: readonly MemberStatus[]): TlsMigrationStep | undefined {
  const args = templateArgs(read.statefulSet);
  return decideTlsMigration({
    asked: tlsAsked(read.spec),
    explicit: read.spec.tls?.mode === 'operator',
    live: args && templateTls(args),
    rolledOut: read.statefulSet !== undefined && rolledOut(read.statefulSet),
    certificatesIssued: read.certificatesIssued,
    members,
    guarded: read.networkPolicyInForce || read.spec.tls?.migrateWithoutNetworkPolicy === true,
    plainClientsSince: read.previous?.tls?.migration?.plainClientsSince,
    clientGraceMs: read.config.tls.plainClientGraceSeconds * 1000,
    now: read.now,
  });
}

/** Which TLS this reconcile renders, reaches the members by and issues for. */
export function tlsPlan(read: TlsMigrationReader): TlsPlan {
  const migration = tlsMigration(read);
  if (!migration) {
    const tls = tlsInEffect(read.spec, liveTlsOf(read.statefulSet));
    return { render: tls, reach: tls, issue: tls };
  }
  const asked = tlsAsked(read.spec);
  return { render: migration.render, reach: migration.reach, issue: { mode: 'operator', peer: asked.peer, client: asked.client }, migration };
}

/**
 * status.tls while a migration is under way: what the members run (plain on
 * both until it is done: the client port still serves plain HTTP, and some
 * peers still listen plain) and where the migration stands.
 */
export function migrationStatus(status: TlsStatus, migration: TlsMigrationStep | undefined): TlsStatus {
  if (!migration) return status;
  const { phase, message, membersDone, plainClientsSince, plainClientsUntil } = migration;
  return {
    ...status, mode: 'operator', peer: false, client: false,
    reason: [`moving to TLS (${phase}): ${message}`, status.reason].filter(Boolean).join('; '),
    migration: { phase, message, membersDone: [...membersDone], ...(plainClientsSince ? { plainClientsSince } : {}), ...(plainClientsUntil ? { plainClientsUntil } : {}) },
  };
}
