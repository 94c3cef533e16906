// Slow: a real etcd cluster of every size from 1 to 9 is started and checked (about 1.5 minutes).
/**
 * The etcd engine against real etcd: for every size 1-9, one etcd process per
 * member, started with exactly the arguments the generated StatefulSet gives
 * each pod (test/support/etcd-members.ts substitutes only addresses, ports
 * and the volume's path), forms one cluster with a quorum, and a key written
 * through one member is read, linearizably, through another. The membership
 * interface the controller will use is checked on the same processes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hasQuorum } from '../../engines/membership.js';
import { locateBinaries } from '../cluster/control-plane.js';
import { SIZES } from '../generator/support.js';
import { b64, etcdPost, startLocalEtcdCluster as startCluster } from '../support/etcd-members.js';
import { eventually, yes } from '../support/eventually.js';

const describeWithEtcd = process.env.DKV_SKIP_CLUSTER ? describe.skip : describe;
const NAMESPACE = 'shop';

describeWithEtcd('the etcd engine runs a real etcd cluster', () => {
  let binDir: string;
  let dir: string;
  beforeAll(() => {
    binDir = locateBinaries(['etcd']);
  });
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'dkv-etcd-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it.each(SIZES)('of %i member(s): one quorum, and a key written through one member is read through another', async (size) => {
    const { cluster, pods, membership } = await startCluster(size, binDir, dir);
    try {
      // The generated bootstrap reached etcd unchanged: from the arguments, and from the member ConfigMap.
      const first = cluster.members.get('kv-0')!;
      expect(first.args).toEqual(expect.arrayContaining(['--name=kv-0', `--initial-cluster-token=kv.${NAMESPACE}`]));
      expect(first.environment.ETCD_INITIAL_CLUSTER_STATE).toBe('new');
      expect(first.environment.ETCD_INITIAL_CLUSTER.split(',').map((m) => m.split('=')[0])).toEqual(pods);

      const status = await membership.status();
      expect(status.members.map((m) => m.name)).toEqual(pods);
      expect(status.members.every((m) => m.healthy && !m.learner)).toBe(true);
      expect(status.members.filter((m) => m.leader)).toHaveLength(1);
      expect(hasQuorum(status)).toBe(true);

      const writer = (await cluster.address(pods[0])).clientUrl;
      const reader = (await cluster.address(pods[size - 1])).clientUrl;
      await etcdPost(writer, '/v3/kv/put', { key: b64('orders/1'), value: b64(`written through kv-0 of ${size}`) });
      const read = await etcdPost(reader, '/v3/kv/range', { key: b64('orders/1') });
      expect(Buffer.from(read.kvs[0].value, 'base64').toString()).toBe(`written through kv-0 of ${size}`);
    } finally {
      await cluster.stopAll();
    }
  }, 90_000);

  it('reports alarms apart from health, database sizes, and compacts, defragments and disarms through the membership interface', async () => {
    const { cluster, pods, membership } = await startCluster(3, binDir, dir);
    try {
      const writer = (await cluster.address(pods[0])).clientUrl;
      // 40 overwrites of 200 keys of 4 KiB: history the compaction discards and pages the defragmentation returns.
      const value = b64('x'.repeat(4096));
      for (let round = 0; round < 40; round++) {
        await etcdPost(writer, '/v3/kv/txn', { success: Array.from({ length: 100 }, (_, k) => ({ requestPut: { key: b64(`page/${k}`), value } })) });
        await etcdPost(writer, '/v3/kv/txn', { success: Array.from({ length: 100 }, (_, k) => ({ requestPut: { key: b64(`page/${100 + k}`), value } })) });
      }
      const before = await membership.status();
      const follower = before.members.find((m) => !m.leader)!;
      expect(before.alarms).toEqual([]);
      expect(follower.dbSizeBytes).toBeGreaterThan(10 * 1024 * 1024);
      // 80 writes made revisions 2..81; a follower may not have applied the last few yet when it answers.
      expect(follower.revision).toBeGreaterThan(40);

      await membership.compact(follower.revision!);
      await membership.defragment(follower.name);
      const after = (await membership.status()).members.find((m) => m.id === follower.id)!;
      expect(after.dbSizeBytes!).toBeLessThan(follower.dbSizeBytes! / 2);
      expect(after.dbSizeInUseBytes!).toBeLessThanOrEqual(after.dbSizeBytes!);

      // An armed NOSPACE is what a full member raises: the cluster refuses writes, yet every member
      // answers and follows its leader. It is an alarm, not a lost quorum.
      await etcdPost(writer, '/v3/maintenance/alarm', { action: 'ACTIVATE', memberID: follower.id, alarm: 'NOSPACE' });
      const full = await membership.status();
      expect(full.alarms).toEqual([{ memberId: follower.id, alarm: 'NOSPACE' }]);
      expect(full.members.find((m) => m.id === follower.id)!.alarms).toEqual(['NOSPACE']);
      expect(full.members.every((m) => m.healthy)).toBe(true);
      expect(hasQuorum(full)).toBe(true);
      await expect(etcdPost(writer, '/v3/kv/put', { key: b64('after'), value: b64('refused') })).rejects.toThrow(/database space exceeded/);

      await membership.disarm({ memberId: follower.id, alarm: 'NOSPACE' });
      expect((await membership.status()).alarms).toEqual([]);
      await etcdPost(writer, '/v3/kv/put', { key: b64('after'), value: b64('accepted') });
    } finally {
      await cluster.stopAll();
    }
  }, 90_000);

  it('moves leadership and removes a member through the membership interface, keeping a quorum of the rest', async () => {
    const { cluster, membership } = await startCluster(3, binDir, dir);
    try {
      const before = await membership.status();
      const target = before.members.find((m) => !m.leader)!;
      await membership.moveLeader(target.id);
      await eventually('leadership to move', async () => yes((await membership.status()).leaderId === target.id), 10_000, 100);

      // As scale-in does: the highest ordinal that does not lead leaves the membership, then its process stops.
      const follower = (await membership.status()).members.filter((m) => !m.leader).at(-1)!;
      // etcd refuses a removal until the new leader has heard from enough members ("unhealthy cluster"): the controller retries on a later reconcile.
      await eventually('the removal to be accepted', () => membership.remove(follower.id).then(() => true), 10_000, 200);
      await cluster.stop(follower.name);
      const after = await eventually('a two-member cluster', async () => {
        const s = await membership.status();
        return s.voters === 2 && s.healthyVoters === 2 ? s : undefined;
      }, 10_000, 100);
      expect(after.members.map((m) => m.name)).not.toContain(follower.name);
      expect(hasQuorum(after)).toBe(true);
    } finally {
      await cluster.stopAll();
    }
  }, 90_000);

  it('reports a member that does not answer as unhealthy, and a lost quorum as such', async () => {
    const { cluster, pods, membership } = await startCluster(3, binDir, dir);
    try {
      await cluster.stop(pods[2]);
      const oneDown = await eventually('kv-2 unhealthy', async () => {
        const s = await membership.status();
        return s.members.find((m) => m.name === 'kv-2')?.healthy === false ? s : undefined;
      }, 10_000, 100);
      expect(oneDown.healthyVoters).toBe(2);
      expect(hasQuorum(oneDown)).toBe(true);
      expect(oneDown.members.find((m) => m.name === 'kv-2')!.problem).toMatch(/kv-2|127\.0\.0\.1|ECONNREFUSED|fetch failed/);

      await cluster.stop(pods[1]);
      const lost = await eventually('quorum lost', async () => {
        const s = await membership.status().catch(() => undefined);
        return s && !hasQuorum(s) ? s : undefined;
      }, 20_000, 200);
      expect(lost.healthyVoters).toBeLessThan(2);
    } finally {
      await cluster.stopAll();
    }
  }, 90_000);
});
