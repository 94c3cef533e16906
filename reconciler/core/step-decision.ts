/**
 * What a check or a Day-2 step decided, for the core (reconcile.ts) to act
 * on. A step reads what it needs (through a small reader, never the whole
 * reconcile context) and decides; refusing, reporting and writing are the
 * core's. So a decision is a value a unit test looks at without an API
 * server, as engines/etcd/scaling.ts's decideScalingStep is, and no step
 * writes status behind the core's back.
 */
import type { DegradedReason } from './status.js';

/**
 * Nothing is written to the cluster's objects; the core reports the reason
 * (Degraded, and an Event once) and fails the reconcile.
 */
export interface Refusal {
  readonly kind: 'refuse';
  readonly reason: DegradedReason;
  readonly message: string;
  /**
   * `onChange`: not retried until the object changes (a TerminalError);
   * `backoff`: retried with backoff, as the refusal may go away on its own
   * (a backup still uploading, S3 down).
   */
  readonly retry: 'onChange' | 'backoff';
}

/** The reconcile goes on. */
export interface Proceed {
  readonly kind: 'proceed';
}

export const PROCEED: Proceed = { kind: 'proceed' };

/** What a check before any write decides. */
export type CheckDecision = Proceed | Refusal;
