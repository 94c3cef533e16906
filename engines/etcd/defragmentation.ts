/**
 * Defragmentation and NOSPACE recovery, one step per reconcile, decided from
 * the membership as etcd reports it (a pure function, like scaling.ts and
 * upgrade.ts: the core makes the one call it names).
 *
 * A database file never shrinks by itself: compaction frees pages inside it
 * and the next writes reuse them, but the file keeps its size, and etcd
 * measures the quota against the file. Defragmentation rewrites the file
 * without its free pages; meanwhile that member answers nothing, so
 *
 *   - one member at a time, followers first, the leader only after
 *     leadership moved off it (the next step then finds it a follower);
 *   - never while a voting member is unhealthy, a learner exists, or a
 *     scaling, upgrade or storage step is under way: each of those may
 *     already take one member down, and two down may cost the quorum;
 *   - a member whose file is mostly free pages (minFreePercent) and large
 *     enough to matter (minSizeBytes), at most once per maintenance window
 *     (or, without one, once per interval).
 *
 * NOSPACE (the quota reached: the cluster refuses writes) is recovered as
 * etcd's documentation says (op-guide/maintenance.md, "Space quota"):
 * compact at the current revision, defragment every member one at a time
 * (the same gates, but no window, threshold or interval: the cluster is
 * read-only until it is done), then disarm once every member's file is below
 * the quota with a margin. When the keys in use alone do not
 * fit below that target, no defragmentation can help: the step says so
 * (raise the quota or the volume) instead of defragmenting in a loop.
 */
import { CronExpressionParser } from 'cron-parser';
import { notReady, hasQuorum, type MemberAlarm, type MemberStatus, type MembershipStatus } from '../membership.js';

const MIB = 2 ** 20;

/** The defragmentation window of the spec: opens on `schedule` (cron, UTC) for `durationMinutes`. */
export interface MaintenanceWindow {
  readonly schedule: string;
  readonly durationMinutes: number;
}

export interface DefragmentationInput {
  readonly membership: MembershipStatus;
  /** The quota each member runs with (backend-quota.ts). */
  readonly quotaBytes: number;
  /** spec.maintenance.defragmentation.minFreePercent (default 50). */
  readonly minFreePercent: number;
  /** Smaller files are never defragmented for their free share alone (configuration). */
  readonly minSizeBytes: number;
  /** Without a window: at most once per member per this interval (configuration). */
  readonly intervalMs: number;
  /** NOSPACE is disarmed once every member's file is below the quota less this share (configuration). */
  readonly nospaceMarginPercent: number;
  readonly window?: MaintenanceWindow;
  /** When each member (by pod name) was last defragmented, as status remembers it. */
  readonly lastDefragmented: Readonly<Record<string, number>>;
  /** Another Day-2 step that may take a member down is under way: its words (scaling, upgrade, storage). */
  readonly otherStep?: string;
  /**
   * The revision this controller last compacted the cluster at in a NOSPACE
   * recovery, and when (its memory; lost on a restart, which only compacts
   * and defragments again).
   */
  readonly compacted?: { readonly revision: number; readonly at: number };
  readonly now: number;
}

export type DefragmentationAction =
  | { readonly type: 'compact'; readonly revision: number }
  | { readonly type: 'defragment'; readonly pod: string; readonly id: string }
  | { readonly type: 'moveLeader'; readonly fromPod: string; readonly toId: string; readonly toPod: string }
  | { readonly type: 'disarm'; readonly alarms: readonly MemberAlarm[] };

/**
 * `Defragmenting`: a pass is under way (the action names the member);
 * `Recovering`: the same, to recover from NOSPACE; `Held`: a member needs it,
 * and a gate holds it back; `Idle`: no member needs it; `QuotaTooSmall`:
 * NOSPACE that defragmentation cannot clear.
 */
export type MaintenanceReason = 'Idle' | 'Defragmenting' | 'Recovering' | 'Held' | 'QuotaTooSmall';

export interface DefragmentationStep {
  readonly action?: DefragmentationAction;
  readonly reason: MaintenanceReason;
  /** In words: what is done, or the gate that holds it. */
  readonly message: string;
  readonly requeueAfterMs?: number;
}

const SOON_MS = 2_000;
const HELD_MS = 10_000;

const mib = (bytes: number) => `${Math.round(bytes / MIB)} MiB`;
const freeShare = (m: MemberStatus) => (m.dbSizeBytes ? 1 - (m.dbSizeInUseBytes ?? m.dbSizeBytes) / m.dbSizeBytes : 0);
const ordinal = (m: MemberStatus) => Number(/-(\d+)$/.exec(m.name)?.[1] ?? Number.MAX_SAFE_INTEGER);

/**
 * When the window that contains `now` opened, or undefined when none is open
 * (and when the next opens); an unparseable schedule is a problem (validation
 * refuses it first: this only keeps the controller from throwing).
 */
export function openWindow(window: MaintenanceWindow, now: number): { openedAt?: number; nextAt?: number; problem?: string } {
  try {
    const before = CronExpressionParser.parse(window.schedule, { currentDate: new Date(now + 1), tz: 'UTC' });
    const openedAt = before.prev().getTime();
    if (now < openedAt + window.durationMinutes * 60_000) return { openedAt };
    const after = CronExpressionParser.parse(window.schedule, { currentDate: new Date(now), tz: 'UTC' });
    return { nextAt: after.next().getTime() };
  } catch (e) {
    return { problem: `spec.maintenance.defragmentation.window.schedule ${JSON.stringify(window.schedule)} does not parse: ${(e as Error).message}` };
  }
}

/** A cluster this full is looked at every NEAR_FULL_LOOK_MS: NOSPACE, when it comes, is seen and recovered within seconds. */
export const NEAR_FULL_SHARE = 0.75;
const NEAR_FULL_LOOK_MS = 5_000;

export function decideDefragmentationStep(input: DefragmentationInput): DefragmentationStep {
  const step = decide(input);
  const fullest = Math.max(0, ...input.membership.members.map((m) => m.dbSizeBytes ?? 0));
  if (fullest < NEAR_FULL_SHARE * input.quotaBytes || (step.requeueAfterMs ?? Infinity) <= NEAR_FULL_LOOK_MS) return step;
  return { ...step, requeueAfterMs: NEAR_FULL_LOOK_MS };
}

function decide(input: DefragmentationInput): DefragmentationStep {
  const { membership } = input;
  const nospace = membership.alarms.filter((a) => a.alarm === 'NOSPACE');
  const idle = (message: string): DefragmentationStep => ({ reason: 'Idle', message });
  const held = (message: string): DefragmentationStep => ({ reason: 'Held', message, requeueAfterMs: nospace.length > 0 ? SOON_MS : HELD_MS });

  const voters = membership.members.filter((m) => !m.learner);
  const needed = nospace.length > 0 ? recoveryCandidates(input) : maintenanceCandidates(input);
  if (needed.kind !== 'candidates') return needed.step;
  const candidates = needed.members;
  if (candidates.length === 0 && nospace.length === 0) return idle(needed.why);

  // The gates: nothing else may take a member down meanwhile.
  if (input.otherStep) return held(`waiting for ${input.otherStep} to finish`);
  if (!hasQuorum(membership)) return held(`no quorum: ${membership.healthyVoters} of ${membership.voters} voting members healthy`);
  const unready = notReady(membership);
  if (unready) return held(`waiting for every member to be healthy; ${unready}`);
  const learner = membership.members.find((m) => m.learner);
  if (learner) return held(`waiting for the learner ${learner.name || learner.id} to be promoted`);
  const leader = voters.find((m) => m.leader);
  if (!leader) return held('waiting for a leader');

  if (nospace.length > 0) {
    const revision = Math.max(0, ...voters.map((m) => m.revision ?? 0));
    if (revision > 0 && (input.compacted?.revision ?? 0) < revision) {
      return { reason: 'Recovering', message: `NOSPACE: compacting at revision ${revision}, then defragmenting each member over ${mib(recoveryTarget(input))}`, action: { type: 'compact', revision }, requeueAfterMs: 0 };
    }
    if (candidates.length === 0) {
      return { reason: 'Recovering', message: `NOSPACE disarmed: every member's database is below ${mib(recoveryTarget(input))} (quota ${mib(input.quotaBytes)})`, action: { type: 'disarm', alarms: nospace }, requeueAfterMs: SOON_MS };
    }
  }
  const reason = nospace.length > 0 ? 'Recovering' : 'Defragmenting';
  const why = nospace.length > 0 ? 'to recover from NOSPACE' : `${needed.why}`;
  const followers = candidates.filter((m) => !m.leader).sort((a, b) => ordinal(a) - ordinal(b));
  const rest = candidates.length - 1;
  const after = rest > 0 ? `; ${rest} more after it` : '';
  if (followers.length > 0) {
    const m = followers[0];
    return { reason, message: `defragmenting ${m.name} (${describe(m)}) ${why}${after}`, action: { type: 'defragment', pod: m.name, id: m.id }, requeueAfterMs: SOON_MS };
  }
  // Only the leader is left: a single member is defragmented in place (it pauses meanwhile); else leadership moves first,
  // to the follower furthest along the log: etcd hands leadership over only once its target has caught up, so the
  // furthest one takes it soonest and the writes that wait on the transfer wait least. Lowest ordinal on a tie.
  const successor = voters.filter((m) => m.id !== leader.id).sort((a, b) => (b.raftIndex ?? 0) - (a.raftIndex ?? 0) || ordinal(a) - ordinal(b))[0];
  if (!successor) {
    return { reason, message: `defragmenting the only member ${leader.name} (${describe(leader)}) ${why}: it answers nothing meanwhile`, action: { type: 'defragment', pod: leader.name, id: leader.id }, requeueAfterMs: SOON_MS };
  }
  return { reason, message: `moving leadership from ${leader.name} to ${successor.name} before defragmenting it ${why}`, action: { type: 'moveLeader', fromPod: leader.name, toId: successor.id, toPod: successor.name }, requeueAfterMs: SOON_MS };
}

function describe(m: MemberStatus): string {
  return `${mib(m.dbSizeBytes ?? 0)}, ${Math.round(freeShare(m) * 100)}% free`;
}

/** The size every member's file must be below before NOSPACE is disarmed. */
export function recoveryTarget(input: Pick<DefragmentationInput, 'quotaBytes' | 'nospaceMarginPercent'>): number {
  return input.quotaBytes * (1 - input.nospaceMarginPercent / 100);
}

type Candidates = { kind: 'candidates'; members: MemberStatus[]; why: string } | { kind: 'step'; step: DefragmentationStep };

/**
 * Under NOSPACE: every voter not yet defragmented since the compaction, as
 * etcd's guide does, not only those over the target: every member holds the
 * same keys, and one left just below the target (its file grew slower, its
 * freed pages pinned by fewer open reads) would be the next to raise NOSPACE,
 * for the second of a cluster already read-only that defragmenting it costs.
 * One defragmented since, and still over the target, holds that much in use:
 * no defragmentation can help. (Its size in use alone says less: pages a
 * compaction freed stay "pending" in the file's count until the next write,
 * and a cluster under NOSPACE writes nothing.) Without a compaction to count
 * from (the revision unknown), the members over the target only, so that
 * the recovery still ends.
 */
function recoveryCandidates(input: DefragmentationInput): Candidates {
  const target = recoveryTarget(input);
  const voters = input.membership.members.filter((m) => !m.learner && m.dbSizeBytes !== undefined);
  const over = voters.filter((m) => m.dbSizeBytes! >= target);
  // Status keeps the times to the second: a member defragmented in the second of the compaction counts as since.
  const compactedSecond = input.compacted === undefined ? undefined : Math.floor(input.compacted.at / 1000) * 1000;
  const sinceCompaction = (m: MemberStatus) => compactedSecond !== undefined && (input.lastDefragmented[m.name] ?? -Infinity) >= compactedSecond;
  const tooFull = over.filter(sinceCompaction);
  const due = input.compacted === undefined ? over : voters.filter((m) => !sinceCompaction(m));
  if (tooFull.length > 0) {
    return {
      kind: 'step', step: {
        reason: 'QuotaTooSmall', requeueAfterMs: 30_000,
        message: `NOSPACE: the keys in use alone (${tooFull.map((m) => `${m.name}: ${mib(m.dbSizeInUseBytes ?? m.dbSizeBytes!)}`).join(', ')}) do not fit below ${mib(target)} `
          + `(quota ${mib(input.quotaBytes)} less ${input.nospaceMarginPercent}%) even after compaction: raise spec.maintenance.quota or spec.storage.size, or delete keys`,
      },
    };
  }
  return { kind: 'candidates', members: due, why: 'to recover from NOSPACE' };
}

/** In maintenance: members mostly free, large enough, not yet defragmented in this window (or interval). */
function maintenanceCandidates(input: DefragmentationInput): Candidates {
  const voters = input.membership.members.filter((m) => !m.learner && m.dbSizeBytes !== undefined);
  const fragmented = voters.filter((m) => m.dbSizeBytes! >= input.minSizeBytes && freeShare(m) * 100 >= input.minFreePercent);
  if (fragmented.length === 0) {
    return { kind: 'step', step: { reason: 'Idle', message: `no member needs defragmenting (at least ${input.minFreePercent}% free of at least ${mib(input.minSizeBytes)})` } };
  }
  let since = input.now - input.intervalMs;
  let period = `in the last ${Math.round(input.intervalMs / 60_000)} min`;
  if (input.window) {
    const open = openWindow(input.window, input.now);
    if (open.problem) return { kind: 'step', step: { reason: 'Held', message: open.problem } };
    if (open.openedAt === undefined) {
      return { kind: 'step', step: { reason: 'Held', message: `${names(fragmented)} need defragmenting: waiting for the maintenance window (${input.window.schedule}, next at ${new Date(open.nextAt!).toISOString()})`, requeueAfterMs: Math.max(SOON_MS, open.nextAt! - input.now) } };
    }
    since = open.openedAt;
    period = `in this window (opened ${new Date(open.openedAt).toISOString()})`;
  }
  const due = fragmented.filter((m) => (input.lastDefragmented[m.name] ?? -Infinity) < since);
  if (due.length === 0) {
    const next = Math.min(...fragmented.map((m) => input.lastDefragmented[m.name] ?? input.now)) + input.intervalMs;
    return { kind: 'step', step: { reason: 'Idle', message: `${names(fragmented)} defragmented ${period} already`, requeueAfterMs: input.window ? undefined : Math.max(SOON_MS, next - input.now) } };
  }
  return { kind: 'candidates', members: due, why: `(at least ${input.minFreePercent}% free)` };
}

const names = (members: readonly MemberStatus[]) => members.map((m) => m.name).join(', ');
