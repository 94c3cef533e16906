/**
 * The fleet lock: one Lease on a designated coordination API server that
 * every member of a fleet (one controller per Kubernetes cluster: only the
 * leader of each cluster competes) can reach. Its holder is the fleet's one
 * writer of what is global (fleet-role.ts).
 *
 * Why a Lease and not a conditional-write object in S3 (the two places the
 * operator literature names): the Lease is what leader election inside one
 * cluster already proves (kube/leader.ts, with its tests): every write
 * carries a resourceVersion precondition, expiry is judged on each side's
 * own monotonic clock from when it last saw the record change (no clock
 * agreement needed), and the holder gives up `leaseDuration -
 * renewDeadline` before anyone may take over, which is the window in which
 * it fences its backups. S3's conditional writes (If-Match / If-None-Match)
 * are not offered by every S3-compatible store, and an S3 lock still needs
 * the same timing rules written again; and the backup bucket would then be
 * both the thing fenced and the fence.
 *
 * Fencing order: a member that stops holding the lock (its renewals failed
 * past the renew deadline, or it saw another holder) first becomes standby,
 * which stops its export and suspends and deletes its backups
 * (Controller.setFleetRole), and only a member shutting down releases the
 * lock, after fencing. A member starts as standby: nothing global is
 * written until the lock is won.
 */
import type { Clock, TimerHandle } from '../../kube/clock.js';
import { realClock } from '../../kube/clock.js';
import { LeaderElector, type LeaseApi } from '../../kube/leader.js';
import type { Logger } from '../../kube/log.js';
import { memberOf, type FleetRole } from './fleet-role.js';

export interface FleetLockOptions {
  /** A client of the coordination API server, which holds the Lease. */
  readonly client: LeaseApi;
  /** What the role changes drive (the Controller). */
  readonly controller: { setFleetRole(role: FleetRole): Promise<void> };
  /** This Kubernetes cluster's name in the fleet (e.g. `eu-west`): in the Standby condition of the others. */
  readonly member: string;
  /** This process (pod name): the holder identity is `<member>/<identity>`. */
  readonly identity: string;
  readonly namespace: string;
  readonly name: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  readonly clock?: Clock;
  readonly log: Logger;
}

export class FleetLock {
  private readonly elector: LeaderElector;
  private readonly clock: Clock;
  private watchTimer?: TimerHandle;
  private activeMember?: string;
  private active = false;
  private stopped = false;
  /** Role changes run one after the other, in the order they happened. */
  private changes: Promise<void> = Promise.resolve();
  /** Whether the last role change failed (a standby's fencing could not be written). */
  private lastChangeFailed = false;

  constructor(private readonly options: FleetLockOptions) {
    this.clock = options.clock ?? realClock;
    const { member, log } = options;
    this.elector = new LeaderElector({
      client: options.client, clock: this.clock, namespace: options.namespace, name: options.name, identity: `${member}/${options.identity}`,
      leaseDurationMs: options.leaseDurationMs, renewDeadlineMs: options.renewDeadlineMs, retryPeriodMs: options.retryPeriodMs,
      // Released by stop(), which fences first: see the file's comment.
      releaseOnStop: true,
      log: log.child({ task: 'fleet-lock' }),
      onStartedLeading: () => {
        this.active = true;
        log.info('fleet: this cluster holds the fleet lock, writing what is global', { member });
        this.change({ role: 'active', member });
      },
      onStoppedLeading: () => {
        this.active = false;
        log.warn('fleet: lost the fleet lock, fencing backups and standing by', { member });
        this.change({ role: 'standby', member, activeMember: this.otherHolder() });
      },
    });
  }

  /** The member holding the lock, unless it is this process (a Lease it has just stopped renewing). */
  private otherHolder(): string | undefined {
    const holder = this.elector.holder;
    return holder === `${this.options.member}/${this.options.identity}` ? undefined : memberOf(holder);
  }

  /** Whether this member holds the lock now. */
  get holding(): boolean {
    return this.active;
  }

  private change(role: FleetRole): void {
    this.changes = this.changes.then(() => this.options.controller.setFleetRole(role)).then(() => {
      this.lastChangeFailed = false;
    }, (e: unknown) => {
      this.lastChangeFailed = true;
      this.options.log.error('fleet: role change failed', { role: role.role, error: (e as Error).message });
    });
  }

  /** Starts as standby (nothing global until the lock is won), then competes for the lock. */
  async start(): Promise<void> {
    this.change({ role: 'standby', member: this.options.member });
    await this.changes;
    this.elector.start();
    this.watchHolder();
  }

  /** While standing by, the Standby condition names whoever holds the lock now. */
  private watchHolder(): void {
    if (this.stopped) return;
    this.watchTimer = this.clock.after(this.options.retryPeriodMs, () => {
      const holder = this.otherHolder();
      if (!this.active && holder !== this.activeMember) {
        this.activeMember = holder;
        this.change({ role: 'standby', member: this.options.member, activeMember: holder });
      }
      this.watchHolder();
    }).unref();
  }

  /**
   * Fences first (standby), then gives the lock up so the other member need
   * not wait for it to expire; if the fencing could not be written, the lock
   * is left to expire instead (the other member then waits the lease out).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.watchTimer?.cancel();
    this.change({ role: 'standby', member: this.options.member });
    await this.changes;
    await this.elector.stop({ release: !this.lastChangeFailed });
  }
}
