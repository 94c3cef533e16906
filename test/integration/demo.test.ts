// Slow: `npm run demo` end to end, on a control plane with nodes of its own (about a minute; more while kwok builds on a cold cache).
/**
 * `npm run demo` keeps working: run as a user runs it (the compiled script,
 * in its own process, on its own control plane), it ends by itself with
 * every example cluster converged, the out-of-band scale undone with the
 * Event naming who made it, and everything deleted.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { packageRoot } from '../../api/package-root.js';
import { describeWithCluster } from '../cluster/kube.js';

describeWithCluster('npm run demo', () => {
  it('converges the examples, undoes a kubectl scale with an Event naming kubectl, deletes everything, and exits 0', () => {
    const run = spawnSync(process.execPath, [join(packageRoot(), 'lib', 'scripts', 'demo.js'), '--quiet'], { encoding: 'utf8', timeout: 420_000 });
    const out = run.stdout.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), ''); // the headings' bold
    expect([run.status, run.stderr.split('\n').filter((l) => /error/i.test(l))]).toEqual([0, []]);
    // The table kubectl prints with the CRD's printer columns: every example at its size, all ready.
    expect(out).toMatch(/^dev\s+scratch\s+1\s+1\s+QuorumAvailable/m);
    expect(out).toMatch(/^dev\s+sessions\s+3\s+3\s+QuorumAvailable/m);
    expect(out).toMatch(/^shop\s+orders\s+5\s+5\s+QuorumAvailable/m);
    expect(out).toMatch(/^DriftCorrected\s+StatefulSet\/orders: restored spec\.replicas \(changed by kubectl/m);
    expect(out).toMatch(/^orders\s+5\/5\s/m);
    expect(out).toMatch(/-l app\.kubernetes\.io\/name=distributedkv,app\.kubernetes\.io\/managed-by=dkv\nNo resources found\./);
    expect(out).toMatch(/== done: 3 clusters converged, drift undone, all deleted, in [\d.]+ s/);
  }, 480_000);
});
