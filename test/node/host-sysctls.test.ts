/**
 * test/cluster/host-sysctls.ts: the kernel settings a kubelet rewrites are
 * put back as they were before any node ran, by the last node to stop,
 * whichever order overlapping nodes start and stop in. (A settings
 * directory in a temp dir stands for /proc/sys.)
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { holdHostSysctls, type HostSysctlsPaths } from '../cluster/host-sysctls.js';

const KEYS = ['vm/overcommit_memory', 'kernel/panic'];

describe('the host-wide settings of overlapping real nodes', () => {
  let root: string;
  let paths: HostSysctlsPaths;
  const value = (k: string) => readFileSync(join(paths.procSys, k), 'utf8').trim();
  /** What a kubelet does at its start. */
  const kubeletStarts = () => {
    writeFileSync(join(paths.procSys, 'vm/overcommit_memory'), '1');
    writeFileSync(join(paths.procSys, 'kernel/panic'), '10');
  };

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'dkv-sysctls-'));
    paths = { dir: join(root, 'run'), procSys: join(root, 'sys') };
    for (const k of KEYS) mkdirSync(join(paths.procSys, k, '..'), { recursive: true });
    writeFileSync(join(paths.procSys, 'vm/overcommit_memory'), '0');
    writeFileSync(join(paths.procSys, 'kernel/panic'), '1');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  test('one node: its stop puts back what it found', () => {
    const release = holdHostSysctls('a', KEYS, paths);
    kubeletStarts();
    release();
    expect(KEYS.map(value)).toEqual(['0', '1']);
  });

  test('a node started while another\'s kubelet ran, stopping last, puts back the values from before both (not the kubelet\'s it found)', () => {
    const releaseA = holdHostSysctls('a', KEYS, paths);
    kubeletStarts();
    const releaseB = holdHostSysctls('b', KEYS, paths);
    releaseA();
    // B's kubelet still runs: nothing is put back under it.
    expect(KEYS.map(value)).toEqual(['1', '10']);
    releaseB();
    expect(KEYS.map(value)).toEqual(['0', '1']);
  });

  test('a node whose process died without stopping it does not hold the settings, and its baseline (the values before it) is the one put back', () => {
    const releaseA = holdHostSysctls('a', KEYS, paths);
    kubeletStarts();
    // Its process dies: a pid no process has any more.
    const dead = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' }).stdout.trim();
    writeFileSync(join(paths.dir, 'holders', 'a'), dead);
    const releaseB = holdHostSysctls('b', KEYS, paths);
    releaseB();
    expect(KEYS.map(value)).toEqual(['0', '1']);
    releaseA(); // late: nothing left to do
    expect(KEYS.map(value)).toEqual(['0', '1']);
  });
});
