import { realClock, type Clock, type TimerHandle } from './clock.js';
import { KubeApiError, resourcePath, type KubeClient } from './client.js';
import { silentLogger, type Logger } from './log.js';

const LEASE_API = 'coordination.k8s.io/v1';
/** client-go's JitterFactor: candidates spread their retries so they do not poll in lockstep. */
const CANDIDATE_JITTER = 1.2;

/** The one call leader election makes: a request for the Lease (a KubeClient has it; tests pass a fake Lease API). */
export type LeaseApi = Pick<KubeClient, 'request'>;

export interface LeaderElectionOptions {
  /** Client for the API server that holds the Lease. */
  readonly client: LeaseApi;
  /** Time and timers. @default the real clock */
  readonly clock?: Clock;
  /** Namespace of the Lease. */
  readonly namespace: string;
  /** Name of the Lease; every replica of one controller uses the same name. */
  readonly name: string;
  /** Unique per process (e.g. the pod name): the value written to `spec.holderIdentity`. */
  readonly identity: string;
  /** How long others wait, after they last saw the Lease change, before taking it over. @default 15000 */
  readonly leaseDurationMs?: number;
  /** How long the leader keeps leading without a successful renew; must be < leaseDurationMs. @default 10000 */
  readonly renewDeadlineMs?: number;
  /** Pause between attempts to acquire or renew. @default 2000 */
  readonly retryPeriodMs?: number;
  /** Called when this process becomes leader: begin reconciling. */
  readonly onStartedLeading: () => void;
  /** Called, exactly once per term, when this process stops being leader: stop reconciling now. */
  readonly onStoppedLeading: () => void;
  /**
   * Free the Lease on stop() (client-go's ReleaseOnCancel). With false, a
   * stopped leader leaves it to expire, as a crashed process does.
   * @default true
   */
  readonly releaseOnStop?: boolean;
  /** Every line carries the Lease and this identity. @default silentLogger */
  readonly log?: Logger;
}

/** The part of a coordination.k8s.io/v1 Lease that leader election reads and writes. */
interface Lease {
  apiVersion: string; kind: string; metadata: { name: string; namespace: string; resourceVersion?: string };
  spec?: { holderIdentity?: string; leaseDurationSeconds?: number; acquireTime?: string; renewTime?: string; leaseTransitions?: number };
}

/**
 * Leader election through a Lease, with client-go's semantics: at most one
 * replica reconciles at a time, provided clocks tick at about the same rate
 * (they need not agree on the time: remote timestamps are never compared
 * with the local clock).
 *
 * - Others consider the Lease expired only `leaseDuration` after they last
 *   SAW it change, measured on their own monotonic clock.
 * - The leader stops leading if no renew succeeded within `renewDeadline` of
 *   the start of the last successful one, so it gives up before anyone else
 *   may take over (margin: leaseDuration - renewDeadline). It also steps down
 *   at once when it sees another holder.
 * - Every write carries the resourceVersion it read, so two replicas can never
 *   both win a race: the loser gets 409 and re-reads on its next attempt.
 */
export class LeaderElector {
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly path: string;
  private state: 'new' | 'running' | 'stopped' = 'new';
  private leading = false;
  /** The last Lease read or written, and when (monotonic) its record was first seen in that form. */
  private lease?: Lease;
  private observedKey = '';
  private observedAt = 0;
  private loopTimer?: TimerHandle;
  private deadlineTimer?: TimerHandle;
  private readonly clock: Clock;
  private readonly log: Logger;
  private inflight?: Promise<void>;
  private halted?: Promise<void>;

  constructor(private readonly options: LeaderElectionOptions) {
    this.leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = options.retryPeriodMs ?? 2_000;
    this.clock = options.clock ?? realClock;
    this.log = (options.log ?? silentLogger).child({ lease: `${options.namespace}/${options.name}`, identity: options.identity });
    // client-go's checks: a leader must give up before others may take over, and have time for more than one retry.
    if (!options.identity || !(this.leaseDurationMs > this.renewDeadlineMs && this.renewDeadlineMs > CANDIDATE_JITTER * this.retryPeriodMs)) {
      throw new Error(`leader election: needs an identity and leaseDurationMs > renewDeadlineMs > ${CANDIDATE_JITTER} * retryPeriodMs (got ${this.leaseDurationMs}, ${this.renewDeadlineMs}, ${this.retryPeriodMs})`);
    }
    this.path = resourcePath(LEASE_API, 'Lease', options.namespace, options.name);
  }

  /** Starts acquiring (then renewing) in the background. An elector runs once: after stop(), make a new one. */
  start(): void {
    if (this.state !== 'new') throw new Error('leader election: start() called twice');
    this.state = 'running';
    this.schedule(0);
  }

  isLeader(): boolean {
    return this.leading;
  }

  /** The holder of the Lease as last read or written ('' when free, undefined before the first read). */
  get holder(): string | undefined {
    return this.lease === undefined ? undefined : this.lease.spec?.holderIdentity ?? '';
  }

  /**
   * Stops the loop; a leader stops leading, then (unless releaseOnStop is
   * false, or this call says `release: false`) releases the Lease so a
   * successor need not wait for it to expire. Later calls wait for the first.
   */
  stop(options: { readonly release?: boolean } = {}): Promise<void> {
    return (this.halted ??= (async () => {
      this.state = 'stopped';
      this.loopTimer?.cancel();
      this.stepDown('stopped');
      await this.inflight; // a write in flight may still succeed: release what it wrote
      const release = options.release ?? this.options.releaseOnStop ?? true;
      if (release && this.lease?.spec?.holderIdentity === this.options.identity) await this.release(this.lease);
    })());
  }

  /** The loop timer stays ref'd: a standby candidate may have nothing else keeping its process alive. */
  private schedule(delayMs: number): void {
    this.loopTimer = this.clock.after(delayMs, () => {
      this.inflight = this.attempt().finally(() => {
        this.inflight = undefined;
        const jitter = this.leading ? 0 : this.clock.random() * CANDIDATE_JITTER * this.retryPeriodMs;
        if (this.state === 'running') this.schedule(this.retryPeriodMs + jitter);
      });
    });
  }

  /** One try to acquire or renew. Never rejects: every failure is retried after retryPeriod. */
  private async attempt(): Promise<void> {
    const startedAt = this.clock.monotonic();
    try {
      const holder = await this.tryAcquireOrRenew();
      if (this.state !== 'running') return;
      if (holder === this.options.identity) this.renewed(startedAt);
      else this.stepDown(`lease held by ${holder}`);
    } catch (e) {
      const conflict = e instanceof KubeApiError && e.status === 409;
      this.log.warn(conflict ? 'leader.conflict' : 'leader.error', { leading: this.leading, error: e instanceof Error ? e.message : String(e) });
    }
  }

  /** Returns who holds the Lease afterwards; throws on API errors, including 409 when another replica wrote first. */
  private async tryAcquireOrRenew(): Promise<string> {
    const { client, namespace, name, identity } = this.options;
    const now = microTime(new Date(this.clock.now()));
    const timeoutMs = this.renewDeadlineMs;
    const leaseDurationSeconds = Math.ceil(this.leaseDurationMs / 1000);
    let lease: Lease;
    try {
      lease = await client.request<Lease>('GET', this.path, { timeoutMs });
    } catch (e) {
      if (!(e instanceof KubeApiError && e.status === 404)) throw e;
      const body: Lease = { apiVersion: LEASE_API, kind: 'Lease', metadata: { name, namespace }, spec: { holderIdentity: identity, leaseDurationSeconds, acquireTime: now, renewTime: now, leaseTransitions: 0 } };
      this.observe(await client.request<Lease>('POST', resourcePath(LEASE_API, 'Lease', namespace), { body, timeoutMs }));
      return identity;
    }
    this.observe(lease);
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const expiresAt = this.observedAt + (spec.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
    if (holder !== '' && holder !== identity && this.clock.monotonic() <= expiresAt) return holder;
    const ours = holder === identity;
    const spec2 = {
      ...spec, holderIdentity: identity, leaseDurationSeconds, renewTime: now,
      acquireTime: ours ? spec.acquireTime ?? now : now,
      leaseTransitions: (spec.leaseTransitions ?? 0) + (ours ? 0 : 1),
    };
    this.observe(await client.request<Lease>('PUT', this.path, { body: { ...lease, spec: spec2 }, timeoutMs }));
    return identity;
  }

  /** Restarts the expiry clock whenever the record changes: the only time base is this process's own clock. */
  private observe(lease: Lease): void {
    const key = JSON.stringify([lease.spec?.holderIdentity, lease.spec?.renewTime, lease.metadata.resourceVersion]);
    if (key !== this.observedKey) [this.observedKey, this.observedAt] = [key, this.clock.monotonic()];
    const holder = lease.spec?.holderIdentity ?? '';
    if (holder !== (this.lease?.spec?.holderIdentity ?? '')) this.log.info('leader.holder-changed', { holder });
    this.lease = lease;
  }

  /**
   * A renew counts from when its attempt STARTED: the server wrote it later,
   * so others' expiry clocks started later still, and the deadline stays safe.
   */
  private renewed(startedAt: number): void {
    const remaining = startedAt + this.renewDeadlineMs - this.clock.monotonic();
    if (remaining <= 0) return this.stepDown('renew succeeded too late');
    this.deadlineTimer?.cancel();
    // Only meaningful while the process lives; the loop keeps it alive.
    this.deadlineTimer = this.clock.after(remaining, () => this.stepDown(`no successful renew within ${this.renewDeadlineMs} ms`)).unref();
    if (this.leading) return;
    this.leading = true;
    this.log.info('leader.started');
    this.callback(this.options.onStartedLeading);
  }

  private stepDown(reason: string): void {
    this.deadlineTimer?.cancel();
    if (!this.leading) return;
    this.leading = false;
    this.log.info('leader.stopped', { reason });
    this.callback(this.options.onStoppedLeading);
  }

  /** Frees the Lease the way client-go does: empty holder, 1 s duration, guarded by resourceVersion. */
  private async release(lease: Lease): Promise<void> {
    const now = microTime(new Date(this.clock.now()));
    const spec = { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now };
    try {
      this.lease = await this.options.client.request<Lease>('PUT', this.path, { body: { ...lease, spec }, timeoutMs: this.renewDeadlineMs });
      this.log.info('leader.released');
    } catch (e) {
      // Someone else wrote it (409) or the server is unreachable: the Lease simply expires.
      this.log.warn('leader.release-failed', { error: e instanceof Error ? e.message : String(e) });
    }
  }

  /** A throwing callback must not kill the loop that keeps the leadership guarantee. */
  private callback(fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.log.error('leader.callback-failed', { error: e instanceof Error ? e.message : String(e) });
    }
  }

}

/** Kubernetes MicroTime (RFC 3339 with microseconds): `2026-11-22T01:02:03.456000Z`. */
function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
