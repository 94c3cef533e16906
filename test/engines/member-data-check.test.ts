/**
 * The check before etcd starts that a member whose data is gone does not
 * rejoin under its old id (engines/etcd/member-data-check.ts). Peers here
 * are functions; test/integration/member-replacement.test.ts runs the check
 * in the member's init container against real members.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkMemberData, otherPeerUrls, parseListedMembers, startedMemberAt, type ListedMember } from '../../engines/etcd/member-data-check.js';
import { dataLossIn } from '../../engines/etcd/replacement.js';

// What etcd 3.6.8's peer port answered to GET /members: one started member and a learner added, not started.
const ANSWER = '[{"id":13668033151171901709,"peerURLs":["http://127.0.0.1:23801"],"name":"a","clientURLs":["http://127.0.0.1:23791"]},'
  + '{"id":15416598551669419347,"peerURLs":["http://127.0.0.1:23802"],"isLearner":true}]';

const started = (id: string, peer: string): ListedMember => ({ id, name: 'kv-1', peerURLs: [peer], clientURLs: [peer.replace(':2380', ':2379')] });
const PEER = 'https://kv-1.kv-headless.ns.svc.cluster.local:2380';
const CLUSTER = `kv-0=https://kv-0.kv-headless.ns.svc.cluster.local:2380,kv-1=${PEER},kv-2=https://kv-2.kv-headless.ns.svc.cluster.local:2380`;

describe('the data check before a member starts', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'dkv-data-check-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const withWal = () => {
    mkdirSync(join(dir, 'member', 'wal'), { recursive: true });
    writeFileSync(join(dir, 'member', 'wal', '0000000000000000-0000000000000000.wal'), Buffer.alloc(64));
  };

  it('reads member ids exactly: etcd writes them as JSON numbers beyond 2^53', () => {
    const members = parseListedMembers(ANSWER);
    expect(members.map((m) => m.id)).toEqual(['13668033151171901709', '15416598551669419347']);
    expect(members[1]).toEqual({ id: '15416598551669419347', name: undefined, peerURLs: ['http://127.0.0.1:23802'], clientURLs: [], isLearner: true });
  });

  it('counts as started only a member listed at this address with client URLs, whatever the scheme', () => {
    const members = parseListedMembers(ANSWER);
    expect(startedMemberAt('http://127.0.0.1:23801', members)?.id).toBe('13668033151171901709');
    expect(startedMemberAt('https://127.0.0.1:23801', members)?.id).toBe('13668033151171901709');
    // Added by the controller and never started: the member this pod is to become.
    expect(startedMemberAt('http://127.0.0.1:23802', members)).toBeUndefined();
    expect(startedMemberAt('http://127.0.0.1:23803', members)).toBeUndefined();
  });

  it('asks the other members listed in ETCD_INITIAL_CLUSTER, never itself', () => {
    expect(otherPeerUrls(CLUSTER, 'kv-1')).toEqual(['https://kv-0.kv-headless.ns.svc.cluster.local:2380', 'https://kv-2.kv-headless.ns.svc.cluster.local:2380']);
    expect(otherPeerUrls('kv-0=http://a:2380', 'kv-0')).toEqual([]);
    expect(otherPeerUrls('', 'kv-0')).toEqual([]);
  });

  it('refuses an empty data directory of a member the others list as started, in words replacement knows as lost data', async () => {
    const asked: string[] = [];
    const verdict = await checkMemberData({
      dataDir: dir, name: 'kv-1', ownPeerUrl: PEER, initialCluster: CLUSTER,
      fetchMembers: async (url) => {
        asked.push(url);
        return [started('12345678901234567890', PEER)];
      },
    });
    expect(asked).toHaveLength(2);
    expect(verdict.start).toBe(false);
    const refusal = (verdict as { refusal: string }).refusal;
    expect(refusal).toMatch(/^member ab54a98ceb1f0ad2 has already been bootstrapped: kv-1 is a started member/);
    expect(dataLossIn(refusal)).toBe('has already been bootstrapped');
  });

  it('lets a member with a write-ahead log start without asking anyone', async () => {
    withWal();
    const verdict = await checkMemberData({ dataDir: dir, name: 'kv-1', ownPeerUrl: PEER, initialCluster: CLUSTER, fetchMembers: async () => { throw new Error('not to be asked'); } });
    expect(verdict).toEqual({ start: true, why: `${dir} holds a write-ahead log` });
  });

  it('lets an empty member start where it cannot tell: no other member listed, none answering, or only a learner not started at its address', async () => {
    expect((await checkMemberData({ dataDir: dir, name: 'kv-0', ownPeerUrl: PEER, initialCluster: 'kv-0=https://kv-0:2380' })).start).toBe(true);
    const down = await checkMemberData({ dataDir: dir, name: 'kv-1', ownPeerUrl: PEER, initialCluster: CLUSTER, fetchMembers: async () => { throw new Error('connection refused'); } });
    expect(down).toEqual({ start: true, why: `${dir} holds no write-ahead log and no other member answered: etcd decides` });
    const joining = await checkMemberData({ dataDir: dir, name: 'kv-1', ownPeerUrl: PEER, initialCluster: CLUSTER, fetchMembers: async () => [{ id: '7', peerURLs: [PEER], clientURLs: [] }] });
    expect(joining.start).toBe(true);
  });

  it('lets the member start when the answers differ: a follower behind the leader may still list a member just removed to be replaced', async () => {
    const verdict = await checkMemberData({
      dataDir: dir, name: 'kv-1', ownPeerUrl: PEER, initialCluster: CLUSTER,
      fetchMembers: async (url) => (url.includes('kv-0') ? [started('42', PEER)] : [{ id: '43', peerURLs: [PEER], clientURLs: [] }]),
    });
    expect(verdict).toEqual({ start: true, why: expect.stringMatching(/1 of 2 members that answered list a started member .*: the membership is changing, etcd decides$/) });
  });

  it('refuses on the answers there are: one member down does not hide the membership', async () => {
    const verdict = await checkMemberData({
      dataDir: dir, name: 'kv-1', ownPeerUrl: PEER, initialCluster: CLUSTER,
      fetchMembers: async (url) => {
        if (url.includes('kv-0')) throw new Error('connection refused');
        return [started('42', PEER)];
      },
    });
    expect(verdict.start).toBe(false);
  });
});
