/**
 * Refuses to start a member whose data is gone while its cluster still
 * counts it as a started member (docs/auto-healing.md, "A wiped member").
 *
 * etcd makes this check itself only where a new cluster bootstraps
 * (`isMemberBootstrapped`, server/etcdserver/bootstrap.go: "member X has
 * already been bootstrapped"). A member told to join an existing cluster
 * (`ETCD_INITIAL_CLUSTER_STATE=existing`, which every member's ConfigMap
 * says once the cluster has formed) and started on an empty data directory
 * takes its old member id from the others' membership and starts with an
 * empty raft log: the leader either sends entries it cannot hold (etcd
 * panics, "tocommit(N) is out of range") or, when leadership changed since,
 * a snapshot, and the member is back silently, having forgotten the votes
 * it cast. Raft's safety rests on a member never forgetting a vote.
 *
 * So, before etcd starts (the `recover` init container, rebuild-container.ts),
 * a data directory without a write-ahead log is compared with the others'
 * membership: a member listed at this pod's peer address with client URLs
 * has run before, and this directory cannot be its data. The refusal uses
 * etcd's own words, which replacement knows as lost data
 * (replacement.ts), so the controller replaces the member at once instead
 * of waiting for `healing.unhealthySeconds`. Anything it cannot tell (no
 * other member answers: a new cluster, a lost quorum) lets etcd start and
 * decide, as it did before.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Agent, request as httpsRequest } from 'node:https';
import { join } from 'node:path';

/** node:http through require: see etcd-http.ts. */
const { request: httpRequest } = createRequire(import.meta.url)('node:http') as typeof import('node:http');

/** One member as a peer's `/members` lists it (etcd's membership.Member); `id` decimal, exact. */
export interface ListedMember {
  readonly id: string;
  readonly name?: string;
  readonly peerURLs: readonly string[];
  readonly clientURLs: readonly string[];
  readonly isLearner?: boolean;
}

/** A peer's `GET /members` body. Ids are 64-bit: kept as the digits etcd wrote, which JSON numbers would round. */
export function parseListedMembers(body: string): ListedMember[] {
  const exact = body.replace(/"id"\s*:\s*(\d+)/g, '"id":"$1"');
  const parsed = JSON.parse(exact) as { id: string; name?: string; peerURLs?: string[]; clientURLs?: string[]; isLearner?: boolean }[];
  if (!Array.isArray(parsed)) throw new Error('a peer\'s /members answered no list');
  return parsed.map((m) => ({ id: String(m.id), name: m.name, peerURLs: m.peerURLs ?? [], clientURLs: m.clientURLs ?? [], isLearner: m.isLearner }));
}

/** host:port of a URL: a member moving to TLS advertises its peer address under either scheme. */
const address = (url: string): string => {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
};

/**
 * The member listed at `ownPeerUrl` that has started before (it has client URLs: what etcd's own
 * isMemberBootstrapped asks), if any. A member added and not started yet (a learner the controller
 * just added, with no name and no client URLs) is not one: that is the member this pod is to become.
 */
export function startedMemberAt(ownPeerUrl: string, members: readonly ListedMember[]): ListedMember | undefined {
  const own = address(ownPeerUrl);
  return members.find((m) => m.peerURLs.some((u) => address(u) === own) && m.clientURLs.length > 0);
}

/** etcd's own words for it (hex id, as etcd prints ids), which replacement.ts knows as lost data. */
export function wipedMemberRefusal(name: string, member: ListedMember, dataDir: string): string {
  return `member ${BigInt(member.id).toString(16)} has already been bootstrapped: ${name} is a started member of its cluster `
    + `(listed with client URLs ${member.clientURLs.join(', ')}), but ${dataDir} holds no write-ahead log; started, it would rejoin `
    + 'under its old id with an empty raft log. Not started: the controller replaces the member (docs/auto-healing.md: a wiped member)';
}

/** Whether an etcd data directory holds a write-ahead log (what etcd's own `wal.Exist` asks). */
export function hasWriteAheadLog(dataDir: string): boolean {
  try {
    return readdirSync(join(dataDir, 'member', 'wal')).some((f) => f.endsWith('.wal'));
  } catch {
    return false;
  }
}

/** The other members' peer URLs in an `ETCD_INITIAL_CLUSTER` value (`name=url,name=url`). */
export function otherPeerUrls(initialCluster: string, name: string): string[] {
  return initialCluster.split(',').map((entry) => entry.trim()).filter(Boolean)
    .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)] as const)
    .filter(([member, url]) => member !== name && url.length > 0)
    .map(([, url]) => url);
}

/** The member certificate a peer accepts (the member Secret's files), for a peer port that serves TLS. */
export interface PeerTls {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

export function peerTlsFromDirectory(dir: string): PeerTls {
  return { ca: readFileSync(join(dir, 'ca.crt'), 'utf8'), cert: readFileSync(join(dir, 'tls.crt'), 'utf8'), key: readFileSync(join(dir, 'tls.key'), 'utf8') };
}

/** One peer's `GET /members` (the call etcd itself makes to join), within `timeoutMs`. */
export function fetchListedMembers(peerUrl: string, tls: PeerTls | undefined, timeoutMs: number): Promise<ListedMember[]> {
  return new Promise((resolve, reject) => {
    const url = `${peerUrl.replace(/\/$/, '')}/members`;
    const secure = url.startsWith('https:');
    if (secure && !tls) {
      reject(new Error(`${peerUrl} serves TLS and no member certificate is mounted`));
      return;
    }
    const options = { method: 'GET', signal: AbortSignal.timeout(timeoutMs) };
    const req = secure ? httpsRequest(url, { ...options, agent: new Agent({ ca: tls!.ca, cert: tls!.cert, key: tls!.key }) }) : httpRequest(url, options);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`${url}: HTTP ${res.statusCode}`));
        try {
          resolve(parseListedMembers(Buffer.concat(chunks).toString('utf8')));
        } catch (e) {
          reject(e as Error);
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

export interface MemberDataCheck {
  readonly dataDir: string;
  /** The member's name (its pod's). */
  readonly name: string;
  /** Its `--initial-advertise-peer-urls`. */
  readonly ownPeerUrl: string;
  /** `ETCD_INITIAL_CLUSTER` from the member ConfigMap; absent, nothing is asked. */
  readonly initialCluster?: string;
  readonly tls?: PeerTls;
  readonly timeoutMs?: number;
  /** The peer call (tests hand in their own). */
  readonly fetchMembers?: (peerUrl: string) => Promise<ListedMember[]>;
}

export type MemberDataVerdict =
  | { readonly start: true; readonly why: string }
  | { readonly start: false; readonly refusal: string };

/** Whether etcd may start on this data directory: refused only when the others' membership says this member started before. */
export async function checkMemberData(check: MemberDataCheck): Promise<MemberDataVerdict> {
  if (hasWriteAheadLog(check.dataDir)) return { start: true, why: `${check.dataDir} holds a write-ahead log` };
  const peers = otherPeerUrls(check.initialCluster ?? '', check.name);
  if (peers.length === 0) return { start: true, why: `${check.dataDir} holds no write-ahead log and no other member is listed: a new member of a new cluster` };
  const timeoutMs = check.timeoutMs ?? 3_000;
  const fetch = check.fetchMembers ?? ((url: string) => fetchListedMembers(url, check.tls, timeoutMs));
  // Every peer that answers: a peer's copy of the membership is what it has applied, and a follower behind the
  // leader may still list a member the controller just removed to replace it. Only when every answer lists this
  // one as started is it refused; answers that differ are a membership changing, and etcd decides.
  const answers = (await Promise.allSettled(peers.map((url) => fetch(url))))
    .flatMap((a) => (a.status === 'fulfilled' ? [a.value] : []));
  if (answers.length === 0) return { start: true, why: `${check.dataDir} holds no write-ahead log and no other member answered: etcd decides` };
  const started = answers.map((members) => startedMemberAt(check.ownPeerUrl, members));
  if (started.every((m) => m !== undefined)) return { start: false, refusal: wipedMemberRefusal(check.name, started[0]!, check.dataDir) };
  if (started.some((m) => m !== undefined)) {
    return { start: true, why: `${check.dataDir} holds no write-ahead log; ${started.filter(Boolean).length} of ${answers.length} members that answered list a started member at ${check.ownPeerUrl}: the membership is changing, etcd decides` };
  }
  return { start: true, why: `${check.dataDir} holds no write-ahead log and no started member is listed at ${check.ownPeerUrl}: a member joining for the first time` };
}
