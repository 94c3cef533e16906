/**
 * The controller's steps of a quorum-loss recovery the user asked for (the
 * DistributedKV's recovery annotation, judged by recovery.ts), one per
 * reconcile, each read back from the world so a controller killed at any
 * point resumes where it stopped. Pure.
 *
 *   1. record:   the decision (source pod, its member id, the uid of the pod
 *                that runs it now, a recovery id) goes into the recovery
 *                ConfigMap before anything is changed;
 *   2. mark:     every other member's claim is marked for replacement with
 *                its old member id (replacement.ts acts on a mark only once
 *                a quorum exists again: the rebuilt member's);
 *   3. restart:  the source's pod recorded in step 1 is deleted; the
 *                StatefulSet creates it again and its `recover` init
 *                container (quorum-rebuild.ts) rewrites its data into a
 *                one-member cluster with a new member id;
 *   4. replace:  the source answers with another member id than the
 *                recorded one, and holds a quorum alone: the marked members
 *                are replaced one at a time (add a learner, delete the old
 *                claim and pod, promote), the replacement's own steps;
 *   5. finish:   `size` voting members, all healthy, none marked, no
 *                learner: the annotation is removed and the ConfigMap
 *                deleted (in that order: a request left without its record
 *                would be judged again), with one Event.
 *
 * Nothing happens without the annotation; while a recovery is under way
 * (its ConfigMap exists) a request for another member is not read. A
 * refused request is consumed (its annotation removed), so it can never
 * fire later. Until the source restarts, the recovery is abandoned as soon
 * as the quorum shows itself (a linearizable member list, or any voter that
 * reports a leader): the marks are taken off the claims, one per step, and
 * the request and record removed; the core checks once more immediately
 * before it deletes the source's pod.
 */
import { hasQuorum, type MembershipStatus } from '../membership.js';
import { decideRecovery, type QuorumLossSeen } from './recovery.js';
import type { HealingClaim, HealingPod } from './replacement.js';

/** The recovery ConfigMap, as the controller reads it back. */
export interface RecoveryRecord {
  /** The ConfigMap's own name and uid (for its deletion's precondition) and when it was created (ms since the epoch). */
  readonly name: string;
  readonly uid: string;
  readonly createdAtMs: number;
  readonly pod: string;
  readonly memberId: string;
  readonly id: string;
  /** The source's pod when the decision was made: deleting it (once) is what makes the init container act. */
  readonly sourcePodUid: string;
}

export interface RebuildInput {
  /** The recovery annotation's value. */
  readonly request?: string;
  readonly record?: RecoveryRecord;
  /** The membership as the members answered (the source asked first), undefined when none answered. */
  readonly membership?: MembershipStatus;
  readonly size: number;
  /** The StatefulSet's pods by ordinal. */
  readonly pods: readonly string[];
  readonly livePods: ReadonlyMap<string, HealingPod>;
  readonly claims: ReadonlyMap<string, HealingClaim>;
  readonly now: number;
  /** What the controller saw of the quorum's loss (quorum-loss-clock.ts). */
  readonly quorumLoss: QuorumLossSeen;
}

export type RebuildAction =
  | { readonly type: 'record'; readonly pod: string; readonly memberId: string; readonly id: string; readonly sourcePodUid: string; readonly message: string }
  | { readonly type: 'mark'; readonly pod: string; readonly claim: { readonly name: string; readonly uid: string }; readonly memberId: string }
  | { readonly type: 'restartSource'; readonly pod: string; readonly uid: string }
  | { readonly type: 'finish'; readonly record: { readonly name: string; readonly uid: string }; readonly message: string }
  /** A refused request: its annotation is removed (with one Event), so it never fires later. */
  | { readonly type: 'consume'; readonly message: string }
  /** A recovery abandoned before its source restarted (the quorum showed itself): a mark comes off a claim. */
  | { readonly type: 'unmark'; readonly pod: string; readonly claim: { readonly name: string; readonly uid: string } }
  /** ... then the request and the record go, as in `finish`. */
  | { readonly type: 'abandon'; readonly record: { readonly name: string; readonly uid: string }; readonly message: string };

export type RebuildStep =
  /** Nothing to do: no request and no recovery under way. */
  | undefined
  /** The request is refused: it is consumed, nothing else is written. */
  | { readonly kind: 'refused'; readonly message: string; readonly action: Extract<RebuildAction, { type: 'consume' }> }
  /** The loss is not proven yet: the request stays, nothing is written. */
  | { readonly kind: 'waiting'; readonly message: string; readonly requeueAfterMs: number }
  /** A step of the recovery, or a wait for the world to catch up. */
  | { readonly kind: 'recovering'; readonly action?: RebuildAction; readonly message: string; readonly requeueAfterMs: number }
  /** The source holds a quorum again: member replacement (replacement.ts) takes the marked members, one at a time. */
  | { readonly kind: 'replacing'; readonly message: string };

const SOON_MS = 1_000;

/** A member id that no rebuilt member has: the mark of a pod that had no member when the quorum was lost. */
export const NO_MEMBER = 'none';

/** Looked at again this soon while a loss is not proven yet: each look counts towards QUORUM_LOSS_LOOKS. */
const WAITING_MS = 10_000;

/** The quorum shows itself: a linearizable list, a majority healthy, or any voter that reports a leader. */
export function quorumShows(membership: MembershipStatus | undefined): string | undefined {
  if (!membership) return undefined;
  if (membership.listedLinearizably) return 'the member list answered a linearizable read';
  if (hasQuorum(membership)) return `${membership.healthyVoters} of ${membership.voters} voting members are healthy`;
  const leading = membership.members.filter((m) => !m.learner && m.healthy);
  return leading.length > 0 ? `${leading.map((m) => m.name || m.id).join(', ')} reports a leader` : undefined;
}

export function decideRebuildStep(input: RebuildInput): RebuildStep {
  const { record, membership } = input;
  if (!record) {
    const decision = decideRecovery(input.request, membership, input.quorumLoss);
    if (!decision) return undefined;
    if (decision.kind === 'refused') return { kind: 'refused', message: decision.message, action: { type: 'consume', message: decision.message } };
    if (decision.kind === 'waiting') return { kind: 'waiting', message: decision.message, requeueAfterMs: WAITING_MS };
    const pod = input.livePods.get(decision.pod);
    if (!pod || pod.deleting) return { kind: 'recovering', message: `${decision.message}; waiting for its pod to run`, requeueAfterMs: SOON_MS };
    return {
      kind: 'recovering', requeueAfterMs: SOON_MS, message: `${decision.message}: recording the decision`,
      action: { type: 'record', pod: decision.pod, memberId: decision.memberId, id: input.now.toString(36), sourcePodUid: pod.uid, message: decision.message },
    };
  }
  const from = `recovering from ${record.pod} (member ${record.memberId})`;
  const source = input.livePods.get(record.pod);
  const rebuilt = membership?.members.find((m) => m.name === record.pod && m.id !== record.memberId && !m.learner);
  // Before the source restarts, a quorum that shows itself ends the recovery: it would split the cluster.
  const shown = !rebuilt && source?.uid === record.sourcePodUid && !source.deleting ? quorumShows(membership) : undefined;
  if (shown) {
    const marked = input.pods.map((pod) => ({ pod, claim: input.claims.get(pod) })).find((c) => c.claim && !c.claim.deleting && c.claim.replacing !== undefined);
    const why = `${from} abandoned before ${record.pod} restarted: the cluster has its quorum (${shown})`;
    if (marked) {
      return { kind: 'recovering', requeueAfterMs: SOON_MS, message: `${why}; taking the mark off ${marked.pod}'s claim`, action: { type: 'unmark', pod: marked.pod, claim: { name: marked.claim!.name, uid: marked.claim!.uid } } };
    }
    return { kind: 'recovering', requeueAfterMs: SOON_MS, message: `${why}; removing the request`, action: { type: 'abandon', record: { name: record.name, uid: record.uid }, message: `${why}; no member was changed` } };
  }
  // Before the source restarts: every other member's claim is marked, the decision that they join empty.
  if (!rebuilt && source?.uid === record.sourcePodUid && !source.deleting) {
    const unmarked = input.pods
      .filter((p) => p !== record.pod)
      .map((pod) => ({ pod, claim: input.claims.get(pod) }))
      .find((c) => c.claim && !c.claim.deleting && c.claim.replacing === undefined);
    if (unmarked) {
      const memberId = membership?.members.find((m) => m.name === unmarked.pod)?.id ?? NO_MEMBER;
      return {
        kind: 'recovering', requeueAfterMs: SOON_MS, message: `${from}: marking ${unmarked.pod}'s claim, it joins the rebuilt cluster empty`,
        action: { type: 'mark', pod: unmarked.pod, claim: { name: unmarked.claim!.name, uid: unmarked.claim!.uid }, memberId },
      };
    }
    return {
      kind: 'recovering', requeueAfterMs: SOON_MS, message: `${from}: restarting ${record.pod}, its init container rebuilds a one-member cluster from its data`,
      action: { type: 'restartSource', pod: record.pod, uid: source.uid },
    };
  }
  if (!rebuilt || !membership || !hasQuorum(membership)) {
    return { kind: 'recovering', requeueAfterMs: 2_000, message: `${from}: waiting for ${record.pod} to start as a one-member cluster (its recover init container rewrites its data)` };
  }
  const marked = input.pods.filter((p) => input.claims.get(p)?.replacing !== undefined);
  const voters = membership.members.filter((m) => !m.learner);
  const learners = membership.members.filter((m) => m.learner);
  if (marked.length > 0 || learners.length > 0 || voters.length < input.size || voters.some((m) => !m.healthy)) {
    const waiting = marked.length > 0 ? `${marked.join(', ')} to join empty` : learners.length > 0 ? `${learners.map((m) => m.name || m.id).join(', ')} to be promoted` : `${input.size - voters.length} more voting member(s)`;
    return { kind: 'replacing', message: `${from}: it runs as a one-member cluster with a quorum (member ${rebuilt.id}); ${voters.length} of ${input.size} voting members, waiting for ${waiting}` };
  }
  const seconds = Math.round((input.now - record.createdAtMs) / 1000);
  return {
    kind: 'recovering', requeueAfterMs: SOON_MS, message: `${from}: ${voters.length} voting members again, all healthy; removing the request`,
    action: { type: 'finish', record: { name: record.name, uid: record.uid }, message: `recovered from ${record.pod} (member ${record.memberId}): ${voters.length} of ${input.size} voting members healthy, the others joined empty, ${seconds} s after the decision` },
  };
}
