/**
 * etcd's membership through its v3 HTTP/JSON gateway (the same API etcdctl
 * uses over gRPC): `/v3/cluster/member/*` and `/v3/maintenance/*`. Plain
 * fetch, no client library: five small POSTs, and the ids stay the decimal
 * strings the gateway sends (uint64 does not fit a JavaScript number).
 */
import type { Membership, MemberStatus, MembershipStatus } from '../membership.js';

/** How to reach a member's client URL by its pod name: per-pod DNS in a cluster, a map in tests. */
export type MemberEndpoints = (pod: string) => string;

interface EtcdMember { ID: string; name?: string; peerURLs?: string[]; clientURLs?: string[]; isLearner?: boolean }
interface EtcdStatus { header?: { member_id?: string }; leader?: string; version?: string; errors?: string[]; isLearner?: boolean }

export class EtcdError extends Error {
  constructor(readonly endpoint: string, readonly path: string, message: string) {
    super(`${endpoint}${path}: ${message}`);
    this.name = 'EtcdError';
  }
}

export class EtcdMembership implements Membership {
  /**
   * @param pods the pods that may be members (the StatefulSet's ordinals, and one more while scaling): asked in turn until one answers
   * @param endpoint where each pod's client API is
   * @param timeoutMs per request; a member that does not answer within it counts as unhealthy
   * @param fence when aborted (the controller lost its leadership term), no request is sent and those in flight are cut off
   */
  constructor(
    private readonly pods: () => readonly string[],
    private readonly endpoint: MemberEndpoints,
    private readonly timeoutMs = 3000,
    private readonly fence?: AbortSignal,
  ) {}

  async status(): Promise<MembershipStatus> {
    const { members } = await this.list();
    const statuses = await Promise.all(members.map(async (m): Promise<MemberStatus> => {
      const base = { id: m.ID, name: m.name ?? '', peerUrls: m.peerURLs ?? [], learner: Boolean(m.isLearner) };
      if (!m.name) return { ...base, healthy: false, leader: false, problem: 'added, not started' };
      try {
        const s = await this.post<EtcdStatus>(this.endpoint(m.name), '/v3/maintenance/status', {});
        const problem = s.errors?.length ? s.errors.join('; ') : !s.leader || s.leader === '0' ? 'no leader' : undefined;
        return { ...base, healthy: !problem, leader: s.leader === m.ID, version: s.version, problem };
      } catch (e) {
        return { ...base, healthy: false, leader: false, problem: (e as Error).message };
      }
    }));
    statuses.sort((a, b) => ordinal(a.name) - ordinal(b.name));
    const voters = statuses.filter((m) => !m.learner);
    return {
      members: statuses,
      voters: voters.length,
      healthyVoters: voters.filter((m) => m.healthy).length,
      leaderId: statuses.find((m) => m.leader)?.id,
    };
  }

  async addLearner(peerUrl: string): Promise<string> {
    const { via } = await this.list();
    const added = await this.post<{ member: EtcdMember }>(via, '/v3/cluster/member/add', { peerURLs: [peerUrl], isLearner: true });
    return added.member.ID;
  }

  async promote(id: string): Promise<void> {
    await this.post(await this.leaderEndpoint(), '/v3/cluster/member/promote', { ID: id });
  }

  async remove(id: string): Promise<void> {
    await this.post(await this.leaderEndpoint(), '/v3/cluster/member/remove', { ID: id });
  }

  async moveLeader(toId: string): Promise<void> {
    await this.post(await this.leaderEndpoint(), '/v3/maintenance/transfer-leadership', { targetID: toId });
  }

  /**
   * The member list from the first pod that answers: agreed by a quorum
   * (linearizable) where one exists, else as some member last knew it, so
   * that a cluster without a quorum can still be reported member by member.
   */
  private async list(): Promise<{ members: EtcdMember[]; via: string }> {
    const failures: string[] = [];
    for (const linearizable of [true, false]) {
      for (const pod of this.pods()) {
        const via = this.endpoint(pod);
        try {
          const listed = await this.post<{ members?: EtcdMember[] }>(via, '/v3/cluster/member/list', { linearizable });
          return { members: listed.members ?? [], via };
        } catch (e) {
          failures.push(`${pod}${linearizable ? '' : ' (serializable)'}: ${(e as Error).message}`);
        }
      }
    }
    throw new Error(`no member answered: ${failures.join('; ')}`);
  }

  private async leaderEndpoint(): Promise<string> {
    const status = await this.status();
    const leader = status.members.find((m) => m.leader);
    if (!leader) throw new Error('no member is leader');
    return this.endpoint(leader.name);
  }

  private async post<T>(endpoint: string, path: string, body: unknown): Promise<T> {
    if (this.fence?.aborted) throw new EtcdError(endpoint, path, 'fenced: this controller no longer holds its leadership term');
    const timeout = AbortSignal.timeout(this.timeoutMs);
    let response: Response;
    try {
      response = await fetch(endpoint + path, {
        method: 'POST', body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' },
        signal: this.fence ? AbortSignal.any([timeout, this.fence]) : timeout,
      });
    } catch (e) {
      throw new EtcdError(endpoint, path, (e as Error).cause ? String((e as Error).cause) : (e as Error).message);
    }
    const text = await response.text();
    if (!response.ok) {
      let message = text;
      try {
        message = (JSON.parse(text) as { message?: string }).message ?? text;
      } catch {
        /* not JSON */
      }
      throw new EtcdError(endpoint, path, `${response.status}: ${message}`);
    }
    return JSON.parse(text) as T;
  }
}

function ordinal(pod: string): number {
  const match = /-(\d+)$/.exec(pod);
  return match ? Number(match[1]) : Number.MAX_SAFE_INTEGER;
}
