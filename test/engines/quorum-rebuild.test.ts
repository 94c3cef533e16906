/**
 * The member side of a quorum-loss recovery (engines/etcd/quorum-rebuild.ts,
 * the recover init container): it acts only on the pod the recovery names
 * AND on the data of the member it recorded, once; a run killed part-way
 * starts over from the kept copy. etcdutl is played here by a script that
 * writes the data directory it is asked for and records its arguments; the
 * real one rebuilds a real member in test/integration/quorum-recovery.test.ts.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../kube/log.js';
import { walWith } from '../support/wal-fixture.js';
import { rebuildMember, rebuiltToken, recoveryOrderFrom, type MemberRebuild, type RebuildOutcome } from '../../engines/etcd/quorum-rebuild.js';

const MEMBER = 0xc0ffee_0000_1234n;

let dir: string;
let dataDir: string;
let etcdutl: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'dkv-rebuild-'));
  dataDir = join(dir, 'etcd');
  mkdirSync(join(dataDir, 'member', 'wal'), { recursive: true });
  mkdirSync(join(dataDir, 'member', 'snap'), { recursive: true });
  writeFileSync(join(dataDir, 'member', 'wal', '0000000000000000-0000000000000000.wal'), walWith(MEMBER));
  writeFileSync(join(dataDir, 'member', 'snap', 'db'), 'the member\'s own database');
  etcdutl = join(dir, 'etcdutl');
  writeFileSync(etcdutl, `#!/bin/sh\necho "$@" >> ${join(dir, 'etcdutl.calls')}\nfor a in "$@"; do case "$a" in --data-dir=*) mkdir -p "\${a#--data-dir=}/member";; esac; done\n`);
  chmodSync(etcdutl, 0o755);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const order = { pod: 'kv-0', memberId: MEMBER.toString(), id: 'r1' };
const rebuild = (over: Partial<MemberRebuild> = {}): Promise<RebuildOutcome> => rebuildMember({
  order, dataDir, name: 'kv-0', initialAdvertisePeerUrls: 'http://kv-0.kv-peers:2380', initialClusterToken: 'kv.shop', etcdutl, log: createLogger('silent'), ...over,
});
const calls = () => (existsSync(join(dir, 'etcdutl.calls')) ? readFileSync(join(dir, 'etcdutl.calls'), 'utf8').trim().split('\n') : []);

describe('the recover init container', () => {
  it('does nothing outside a recovery, or on a pod the recovery does not name', async () => {
    expect(await rebuild({ order: undefined })).toMatchObject({ kind: 'skipped', reason: 'no quorum-loss recovery is under way' });
    expect(await rebuild({ name: 'kv-1' })).toMatchObject({ kind: 'skipped', reason: expect.stringMatching(/rebuilds from kv-0, not kv-1/) });
    expect(calls()).toEqual([]);
  });

  it('does nothing on data of another member than the recorded one', async () => {
    expect(await rebuild({ order: { ...order, memberId: '42' } })).toMatchObject({ kind: 'skipped', reason: expect.stringMatching(new RegExp(`belongs to member ${MEMBER}, not to 42`)) });
    expect(calls()).toEqual([]);
    expect(existsSync(join(dataDir, 'member', 'snap', 'db'))).toBe(true);
  });

  it('rebuilds the named member\'s own database into a one-member cluster with the recovery\'s token, keeps the old directory, and never again', async () => {
    expect(await rebuild()).toEqual({ kind: 'rebuilt', from: `${dataDir}.before-recovery-r1`, token: rebuiltToken('kv.shop', 'r1') });
    expect(calls()).toHaveLength(1);
    const args = calls()[0].split(' ');
    expect(args.slice(0, 4)).toEqual(['snapshot', 'restore', join(`${dataDir}.before-recovery-r1`, 'member', 'snap', 'db'), '--skip-hash-check']);
    expect(args).toEqual(expect.arrayContaining(['--name=kv-0', '--initial-cluster=kv-0=http://kv-0.kv-peers:2380', '--initial-cluster-token=kv.shop.recovered-r1', `--data-dir=${dataDir}.restoring/data`]));
    expect(readFileSync(join(`${dataDir}.before-recovery-r1`, 'member', 'snap', 'db'), 'utf8')).toBe('the member\'s own database');
    expect(existsSync(dataDir)).toBe(true);
    expect(readFileSync(`${dataDir}.recovered`, 'utf8').trim()).toBe('r1');
    // The pod restarts (the member's etcd exits, the kubelet starts the pod again): the marker says it was done.
    expect(await rebuild()).toMatchObject({ kind: 'skipped', reason: 'kv-0 was rebuilt for recovery r1 before' });
    expect(calls()).toHaveLength(1);
  });

  it('starts over from the kept copy after a run killed once the data was moved aside', async () => {
    renameSync(dataDir, `${dataDir}.before-recovery-r1`);
    mkdirSync(`${dataDir}.restoring/data`, { recursive: true }); // what the killed run left
    expect(await rebuild()).toMatchObject({ kind: 'rebuilt' });
    expect(existsSync(`${dataDir}.restoring`)).toBe(false);
    expect(existsSync(dataDir)).toBe(true);
  });

  it('fails, naming the way back, when the named member has no data at all', async () => {
    rmSync(dataDir, { recursive: true });
    await expect(rebuild()).rejects.toThrow(/kv-0 has no data to rebuild the cluster from \(restore the last backup instead: spec.restore\)/);
  });

  it('reads its order from the recovery ConfigMap\'s variables, all three or none', () => {
    expect(recoveryOrderFrom({ DKV_RECOVERY_POD: 'kv-0', DKV_RECOVERY_MEMBER_ID: '7', DKV_RECOVERY_ID: 'r1' })).toEqual({ pod: 'kv-0', memberId: '7', id: 'r1' });
    expect(recoveryOrderFrom({ DKV_RECOVERY_POD: 'kv-0' })).toBeUndefined();
  });
});
