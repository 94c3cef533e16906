/**
 * For how long, and on how many looks in a row, this controller has seen a
 * cluster's quorum lost with no member reporting a leader: the clock a
 * quorum-loss recovery waits on (engines/etcd/recovery.ts). Kept in memory,
 * per cluster uid, on purpose: a controller that restarts, or a shard that
 * takes a cluster over, starts the clock again, so an old reading (a status
 * written before an hour of downtime) can never make a fresh blip look like
 * a lasting loss. Delaying a recovery costs minutes; starting one while the
 * old majority serves writes costs a split brain.
 */
import type { QuorumLossSeen } from '../../engines/etcd/recovery.js';

/** What the membership step asks of the clock (a test hands it a loss already proven). */
export interface QuorumLossLooks {
  look(uid: string, lost: boolean, now: number, requiredMs: number): QuorumLossSeen;
}

export class QuorumLossClock implements QuorumLossLooks {
  private readonly seen = new Map<string, { since: number; looks: number }>();

  /** Records one look at the cluster `uid` (lost or not) and says what was seen so far. */
  look(uid: string, lost: boolean, now: number, requiredMs: number): QuorumLossSeen {
    if (!lost) {
      this.seen.delete(uid);
      return { forMs: 0, looks: 0, requiredMs };
    }
    const before = this.seen.get(uid);
    const entry = before ? { since: before.since, looks: before.looks + 1 } : { since: now, looks: 1 };
    this.seen.set(uid, entry);
    return { forMs: now - entry.since, looks: entry.looks, requiredMs };
  }

  /** How many clusters the clock runs for (only those seen without quorum at their last look). */
  get size(): number {
    return this.seen.size;
  }
}

/** One per controller process: the controller's reconciles of every cluster share it. */
export const quorumLossClock = new QuorumLossClock();
