/**
 * The invariants every Day-2 scenario on real etcd members is held to, read
 * from the membership every 150 ms for the whole scenario: a quorum is never
 * lost (a majority down, or no leader agreed for longer than an election
 * takes), never two voting members down at once, never two membership
 * changes overlapping (two learners at once, or a member removed while a
 * learner was being added; etcd applies each change atomically, so those
 * are the ways to overlap). A member busy defragmenting does not answer and
 * counts as down: one at a time is allowed, two are a violation.
 */
import { hasQuorum, type Membership } from '../../engines/membership.js';

export interface Reading { at: number; voters: number; learners: number; down: number; electing: number; quorum: boolean; problems: string; leader?: string }

/**
 * How long the voters may go without an agreed leader. A leadership transfer
 * (which the upgrade does before restarting the leader) is an election: for a
 * few heartbeats the members that heard the new term but not yet the new
 * leader answer "no leader" while every one of them is up. An election that
 * outlasts etcd's randomized election timeout (1-2 s by default) means no
 * majority could agree, which is a lost quorum.
 */
export const LONGEST_ELECTION_MS = 3_000;

/** Reads the membership on a period until stopped; what it saw decides the invariants. */
export class InvariantMonitor {
  readonly readings: Reading[] = [];
  readonly violations: string[] = [];
  private stopped = false;
  private loop?: Promise<void>;
  /** When the current run of readings in which some voter had no leader began. */
  private leaderlessSince?: number;
  /** The longest such run seen, for the printed figures. */
  longestElectionMs = 0;
  /**
   * Each time a reading named another leader than the reading before it (by
   * member name), as `<from> -> <to>`: an election after the leader stopped, or
   * a transfer. A leader change fails every linearizable read in flight
   * (etcd's ErrLeaderChanged), which a member's /readyz makes: on a voting
   * member of a formed cluster, a readiness 503 needs one of these.
   */
  readonly leaderChanges: string[] = [];
  private lastLeader?: string;

  constructor(private readonly membership: Pick<Membership, 'status'>) {}

  /** Readings taken again because every member that failed it had only timed out (see start). */
  stalledReadings = 0;

  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        let reading = await this.read();
        // Every failing member timed out on the observer's side: on a loaded machine the observer (or the whole
        // machine) stalled, and five members of a migration "went down" at one instant. Read again at once and
        // record that: a real outage of two members (a restart takes seconds) is still there, a stall is not.
        if (this.wouldViolate(reading) && onlyTimeouts(reading)) {
          this.stalledReadings++;
          reading = await this.read();
        }
        this.record(reading);
        await new Promise((r) => setTimeout(r, 150));
      }
    })();
  }

  private wouldViolate(reading: Reading): boolean {
    return !reading.quorum || reading.down > 1;
  }

  private async read(): Promise<Reading> {
    const at = Date.now();
    try {
      const s = await this.membership.status();
      const voters = s.members.filter((m) => !m.learner);
      // Down: not answering, or answering with an error. A voter that answers "no leader" is up and in an election,
      // whether its status says so by a leader of 0 or in its errors ("etcdserver: no leader", as after the leader crashed).
      const electing = voters.filter((m) => m.problem === 'no leader' || m.problem === 'etcdserver: no leader').length;
      const down = voters.filter((m) => !m.healthy).length - electing;
      const problems = voters.filter((m) => !m.healthy).map((m) => `${m.name}: ${m.problem}`).join('; ');
      const leader = s.members.find((m) => m.id === s.leaderId)?.name || s.leaderId;
      const quorum = hasQuorum({ voters: voters.length, healthyVoters: voters.length - down });
      return { at, voters: voters.length, learners: s.members.length - voters.length, down, electing, quorum, problems, leader };
    } catch (e) {
      return { at, voters: 0, learners: 0, down: Infinity, electing: 0, quorum: false, problems: (e as Error).message };
    }
  }

  private record(reading: Reading): void {
    const { at } = reading;
    const previous = this.readings.at(-1);
    this.readings.push(reading);
    if (reading.leader) {
      if (this.lastLeader && reading.leader !== this.lastLeader) this.leaderChanges.push(`${this.lastLeader} -> ${reading.leader}`);
      this.lastLeader = reading.leader;
    }
    if (!reading.quorum) this.violations.push(`quorum lost at ${at} (${reading.problems})`);
    if (reading.down > 1) this.violations.push(`${reading.down} voting members down at ${at} (${reading.problems})`);
    if (reading.learners > 1) this.violations.push(`${reading.learners} learners at once at ${at}`);
    // An add is under way while its learner exists: a removal then would overlap it.
    if (previous && previous.learners > 0 && reading.voters < previous.voters) {
      this.violations.push(`a voting member was removed while a learner was being added, at ${at}`);
    }
    if (reading.electing === 0) {
      this.leaderlessSince = undefined;
    } else {
      this.leaderlessSince ??= at;
      this.longestElectionMs = Math.max(this.longestElectionMs, at - this.leaderlessSince);
      if (at - this.leaderlessSince > LONGEST_ELECTION_MS) this.violations.push(`no agreed leader for ${at - this.leaderlessSince} ms at ${at} (${reading.problems})`);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  maxDown(): number {
    return Math.max(0, ...this.readings.map((r) => r.down));
  }
}

/** Whether every problem of a reading is a timeout of the observer's own call (one problem per failing member). */
function onlyTimeouts(reading: Reading): boolean {
  const problems = reading.problems.split('; ').filter(Boolean);
  return problems.length > 0 && problems.every((p) => /TimeoutError|aborted due to timeout/.test(p));
}
