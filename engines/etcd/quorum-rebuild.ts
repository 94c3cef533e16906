/**
 * The member side of a quorum-loss recovery (docs/auto-healing.md, "Quorum
 * loss"): `dkv rebuild-member`, in the `recover` init container of every
 * member pod (rebuild-container.ts), before etcd starts. It acts only when
 * the recovery ConfigMap the controller wrote names this pod AND the member
 * id in this pod's data directory (its WAL, wal-identity.ts) is the one
 * recorded there; anywhere else it does nothing. Then it rewrites the data
 * directory into a one-member cluster: `etcdutl snapshot restore` of the
 * member's own database (`--skip-hash-check`: a database file taken from a
 * data directory carries no appended hash), with a cluster token of its own
 * for this recovery, so the rebuilt member has a new member id and a new
 * cluster id. That keeps everything the member applied and drops what it
 * had only appended, and it cannot happen twice: once rebuilt, the data
 * directory's member id is no longer the recorded one (and
 * `<data-dir>.recovered` records the recovery besides).
 *
 * Why not etcd's `--force-new-cluster` through a shared setting: etcd
 * honours it on any member that has a WAL, so every old member that starts
 * with its data would force a cluster of its own.
 *
 * The old data directory is kept beside it (`<data-dir>.before-recovery-<id>`)
 * until someone deletes it; the rebuilt one is written under
 * `<data-dir>.restoring` and renamed into place last, so a run killed
 * part-way starts over from the kept copy.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../kube/log.js';
import { etcdutl, RestoreError } from './restore.js';
import { readWalIdentity } from './wal-identity.js';

/** What the recovery ConfigMap says (its data, as the init container's environment). */
export interface RecoveryOrder {
  /** The pod to rebuild from. */
  readonly pod: string;
  /** The member id its data directory must hold (decimal). */
  readonly memberId: string;
  /** This recovery's id: part of the rebuilt cluster's token and of the marker. */
  readonly id: string;
}

export interface MemberRebuild {
  /** Undefined when there is no recovery ConfigMap (the usual case). */
  readonly order?: RecoveryOrder;
  /** The member's own settings, as its etcd container has them (member-settings.ts). */
  readonly dataDir: string;
  readonly name: string;
  readonly initialAdvertisePeerUrls: string;
  readonly initialClusterToken: string;
  readonly etcdutl: string;
  readonly log: Logger;
  readonly signal?: AbortSignal;
}

export type RebuildOutcome =
  | { readonly kind: 'skipped'; readonly reason: string }
  | { readonly kind: 'rebuilt'; readonly from: string; readonly token: string };

/** The environment variables the recovery ConfigMap's data sets (rebuild-container.ts reads it with envFrom). */
export const RECOVERY_ENV = { pod: 'DKV_RECOVERY_POD', memberId: 'DKV_RECOVERY_MEMBER_ID', id: 'DKV_RECOVERY_ID' } as const;

/** The order in an environment, or undefined when none (or not all of it) is there. */
export function recoveryOrderFrom(env: NodeJS.ProcessEnv): RecoveryOrder | undefined {
  const [pod, memberId, id] = [env[RECOVERY_ENV.pod], env[RECOVERY_ENV.memberId], env[RECOVERY_ENV.id]];
  return pod && memberId && id ? { pod, memberId, id } : undefined;
}

/** The token the rebuilt one-member cluster bootstraps with: new member and cluster ids, which no old member shares. */
export const rebuiltToken = (token: string, id: string): string => `${token}.recovered-${id}`;

export async function rebuildMember(rebuild: MemberRebuild): Promise<RebuildOutcome> {
  const { order, dataDir, name, log } = rebuild;
  if (!order) return { kind: 'skipped', reason: 'no quorum-loss recovery is under way' };
  if (order.pod !== name) return { kind: 'skipped', reason: `the recovery rebuilds from ${order.pod}, not ${name}` };
  const marker = `${dataDir}.recovered`;
  if (existsSync(marker) && readFileSync(marker, 'utf8').trim() === order.id) return { kind: 'skipped', reason: `${name} was rebuilt for recovery ${order.id} before` };
  const kept = `${dataDir}.before-recovery-${order.id}`;
  // A run killed after moving the data aside resumes from the kept copy.
  const source = existsSync(dataDir) ? dataDir : existsSync(kept) ? kept : undefined;
  if (!source) throw new RestoreError(`${dataDir} does not exist: ${name} has no data to rebuild the cluster from (restore the last backup instead: spec.restore)`);
  const { memberId } = readWalIdentity(source);
  if (memberId !== order.memberId) {
    return { kind: 'skipped', reason: `${source} belongs to member ${memberId}, not to ${order.memberId} that the recovery recorded: rebuilt before, or another member's data` };
  }
  if (source === dataDir) renameSync(dataDir, kept);
  const work = `${dataDir}.restoring`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true, mode: 0o700 });
  const token = rebuiltToken(rebuild.initialClusterToken, order.id);
  log.info('rebuilding a one-member cluster from the member\'s own database', { member: order.memberId, recovery: order.id });
  const restored = join(work, 'data');
  await etcdutl(rebuild.etcdutl, [
    'snapshot', 'restore', join(kept, 'member', 'snap', 'db'), '--skip-hash-check',
    `--data-dir=${restored}`,
    `--name=${name}`,
    `--initial-cluster=${name}=${rebuild.initialAdvertisePeerUrls}`,
    `--initial-cluster-token=${token}`,
    `--initial-advertise-peer-urls=${rebuild.initialAdvertisePeerUrls}`,
  ], rebuild.signal);
  renameSync(restored, dataDir);
  rmSync(work, { recursive: true, force: true });
  writeFileSync(marker, `${order.id}\n`);
  return { kind: 'rebuilt', from: kept, token };
}
