/**
 * etcd's membership through its v3 HTTP/JSON gateway (the same API etcdctl
 * uses over gRPC): `/v3/cluster/member/*` and `/v3/maintenance/*`. Node's
 * http(s), no client library: small POSTs, and the ids stay the decimal
 * strings the gateway sends (uint64 does not fit a JavaScript number). Over
 * TLS with the client certificate where the members run client TLS.
 */
import type { Agent } from 'node:https';
import type { KeyHash, MemberAlarm, Membership, MemberStatus, MembershipStatus } from '../membership.js';
import { tlsAgent, type EtcdAnswer, type EtcdClientTls } from './etcd-http.js';
import { postAs } from './etcd-auth.js';

/** How to reach a member's client URL by its pod name: per-pod DNS in a cluster, a map in tests. */
export type MemberEndpoints = (pod: string) => string;

interface EtcdMember { ID: string; name?: string; peerURLs?: string[]; clientURLs?: string[]; isLearner?: boolean }
interface EtcdStatus {
  header?: { member_id?: string; revision?: string };
  leader?: string; version?: string; errors?: string[]; isLearner?: boolean;
  dbSize?: string; dbSizeInUse?: string; raftIndex?: string; raftTerm?: string; raftAppliedIndex?: string;
}
interface EtcdAlarm { memberID?: string; alarm?: string }

/** Defragmentation rewrites the whole database file: a large one takes far longer than any other call. */
const DEFRAGMENT_TIMEOUT_MS = 10 * 60_000;

/** A number the gateway sent as an int64 string (sizes and revisions stay far below 2^53). */
const int64 = (value: string | undefined): number | undefined => (value === undefined ? undefined : Number(value));

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
   * @param tls the client certificate and the cluster's CA, for members whose client listener uses TLS (https:// endpoints),
   *   or where to find them when a call is made (a certificate that appears or changes later)
   */
  constructor(
    private readonly pods: () => readonly string[],
    private readonly endpoint: MemberEndpoints,
    private readonly timeoutMs = 3000,
    private readonly fence?: AbortSignal,
    private readonly tls?: EtcdClientTls | (() => EtcdClientTls | undefined),
  ) {}

  private clientTls(): EtcdClientTls | undefined {
    return typeof this.tls === 'function' ? this.tls() : this.tls;
  }

  /** The agent for https:// members: one per certificate, shared (tlsAgent). */
  private agent(): Agent | undefined {
    const tls = this.clientTls();
    return tls && tlsAgent(tls);
  }

  async status(): Promise<MembershipStatus> {
    const { members, via, linearizable } = await this.list();
    const alarms = await this.alarms(via);
    const statuses = await Promise.all(members.map(async (m): Promise<MemberStatus> => {
      const own = alarms.filter((a) => a.memberId === m.ID).map((a) => a.alarm);
      const base = { id: m.ID, name: m.name ?? '', peerUrls: m.peerURLs ?? [], learner: Boolean(m.isLearner), alarms: own };
      if (!m.name) return { ...base, healthy: false, leader: false, problem: 'added, not started' };
      try {
        const s = await this.post<EtcdStatus>(this.endpoint(m.name), '/v3/maintenance/status', {});
        // etcd lists the cluster's alarms in `errors` ("memberID:… alarm:NOSPACE"): they are read above, per member,
        // and are not ill health. A full cluster answers and has a leader; calling it unhealthy would report a quorum loss.
        const errors = (s.errors ?? []).filter((e) => !/\balarm:\s*(NOSPACE|CORRUPT)\b/.test(e));
        const problem = errors.length ? errors.join('; ') : !s.leader || s.leader === '0' ? 'no leader' : undefined;
        return {
          ...base, healthy: !problem, leader: s.leader === m.ID, version: s.version, problem,
          dbSizeBytes: int64(s.dbSize), dbSizeInUseBytes: int64(s.dbSizeInUse),
          revision: int64(s.header?.revision), raftIndex: int64(s.raftIndex), raftTerm: int64(s.raftTerm), raftAppliedIndex: int64(s.raftAppliedIndex),
        };
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
      alarms,
      listedLinearizably: linearizable,
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

  async updatePeerUrls(id: string, peerUrls: readonly string[]): Promise<void> {
    await this.post(await this.leaderEndpoint(), '/v3/cluster/member/update', { ID: id, peerURLs: peerUrls });
  }

  async moveLeader(toId: string): Promise<void> {
    await this.post(await this.leaderEndpoint(), '/v3/maintenance/transfer-leadership', { targetID: toId });
  }

  async defragment(pod: string): Promise<void> {
    await this.post(this.endpoint(pod), '/v3/maintenance/defragment', {}, DEFRAGMENT_TIMEOUT_MS);
  }

  async compact(revision: number): Promise<void> {
    const { via } = await this.list();
    // physical: the call returns once the compaction is applied, so a defragmentation after it finds the pages free.
    await this.post(via, '/v3/kv/compaction', { revision: String(revision), physical: true }, DEFRAGMENT_TIMEOUT_MS);
  }

  async hashKV(pod: string, revision: number): Promise<KeyHash> {
    const answer = await this.post<{ hash?: number; compact_revision?: string }>(this.endpoint(pod), '/v3/maintenance/hashkv', { revision: String(revision) });
    return { hash: answer.hash ?? 0, compactRevision: int64(answer.compact_revision) ?? 0 };
  }

  async disarm(alarm: MemberAlarm): Promise<void> {
    const { via } = await this.list();
    await this.post(via, '/v3/maintenance/alarm', { action: 'DEACTIVATE', memberID: alarm.memberId, alarm: alarm.alarm });
  }

  /** The cluster's alarms, as the member at `via` holds them; none when it cannot say (an unanswered list is not an alarm). */
  private async alarms(via: string): Promise<MemberAlarm[]> {
    try {
      const listed = await this.post<{ alarms?: EtcdAlarm[] }>(via, '/v3/maintenance/alarm', { action: 'GET', memberID: '0', alarm: 'NONE' });
      return (listed.alarms ?? [])
        .filter((a): a is { memberID: string; alarm: MemberAlarm['alarm'] } => a.memberID !== undefined && (a.alarm === 'NOSPACE' || a.alarm === 'CORRUPT'))
        .map((a) => ({ memberId: a.memberID, alarm: a.alarm }));
    } catch {
      return [];
    }
  }

  /**
   * The member list from the first pod that answers: agreed by a quorum
   * (linearizable) where one exists, else as some member last knew it, so
   * that a cluster without a quorum can still be reported member by member.
   */
  private async list(): Promise<{ members: EtcdMember[]; via: string; linearizable: boolean }> {
    const failures: string[] = [];
    for (const linearizable of [true, false]) {
      for (const pod of this.pods()) {
        const via = this.endpoint(pod);
        try {
          const listed = await this.post<{ members?: EtcdMember[] }>(via, '/v3/cluster/member/list', { linearizable });
          return { members: listed.members ?? [], via, linearizable };
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

  private async post<T>(endpoint: string, path: string, body: unknown, timeoutMs = this.timeoutMs): Promise<T> {
    if (this.fence?.aborted) throw new EtcdError(endpoint, path, 'fenced: this controller no longer holds its leadership term');
    const timeout = AbortSignal.timeout(timeoutMs);
    let response: EtcdAnswer;
    try {
      const secure = endpoint.startsWith('https:');
      // As the root user where etcd authentication is on (client identities: etcd-auth.ts).
      const signal = this.fence ? AbortSignal.any([timeout, this.fence]) : timeout;
      response = await postAs(endpoint + path, JSON.stringify(body), signal, secure ? this.agent() : undefined, secure ? this.clientTls() : undefined);
    } catch (e) {
      throw new EtcdError(endpoint, path, (e as Error).cause ? String((e as Error).cause) : (e as Error).message);
    }
    const { text } = response;
    if (response.status < 200 || response.status >= 300) {
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
