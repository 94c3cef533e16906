// Slow: the demo runs as a user runs it, a real node started, the examples converged as real etcd containers and deleted (about a minute).
/**
 * `npm run demo:node` (scripts/demo-node.ts), run as a user runs it, in its
 * own process: on a real node the bundle's controller runs as pods of the
 * project's image, in-cluster, under the bundle's ServiceAccount and RBAC;
 * the examples converge as real etcd containers; a kubectl scale is undone
 * by that controller with the Event naming kubectl; everything is deleted,
 * the members' pods too; and the node leaves nothing behind on the machine.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../api/package-root.js';
import { REAL_NODE_BUILD_MS } from '../cluster/real-node.js';
import { realNodeLane } from './real-node-lane.js';

/** Processes whose command line names `text` (the node's dir): none may outlive the demo. */
function processesNaming(text: string): string[] {
  return readdirSync('/proc').filter((p) => /^\d+$/.test(p)).flatMap((p) => {
    try {
      const argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').replaceAll('\0', ' ');
      return argv.includes(text) ? [`${p}: ${argv}`] : [];
    } catch {
      return [];
    }
  });
}

realNodeLane('npm run demo:node')('npm run demo:node', () => {
  it('runs the controller as pods of the project\'s image in-cluster under the bundle\'s RBAC, converges the examples as real etcd containers, undoes a kubectl scale, deletes everything, leaves nothing behind', () => {
    const run = spawnSync(process.execPath, [join(packageRoot(), 'lib', 'scripts', 'demo-node.js'), '--quiet'], { encoding: 'utf8', timeout: REAL_NODE_BUILD_MS + 600_000 });
    const out = run.stdout.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), '');
    expect([run.status, run.signal, run.stderr.split('\n').filter((l) => /error|warn/i.test(l))]).toEqual([0, null, []]);

    // Both replicas of the bundle's Deployment: on the node, at pod addresses, as the bundle's ServiceAccount, Ready through their probe.
    const controllerPods = out.match(/^dkv-controller-\S+\s+dkv-node-\w+\s+10\.244\.0\.\d+\s+dkv-controller\s+true$/gm) ?? [];
    expect(controllerPods).toHaveLength(2);
    expect(out).toMatch(/reaches the API server in-cluster: https:\/\/10\.0\.0\.1:443 \(the kubernetes Service\), as system:serviceaccount:dkv-system:dkv-controller/);
    expect(out).toMatch(/RBAC for system:serviceaccount:dkv-system:dkv-controller: update DistributedKV status yes, patch StatefulSets yes, delete Nodes no/);
    // Converged: every example at its size, all members ready (Ready through their probes on the node).
    expect(out).toMatch(/^dev\s+scratch\s+1\s+1\s+QuorumAvailable/m);
    expect(out).toMatch(/^dev\s+sessions\s+3\s+3\s+QuorumAvailable/m);
    expect(out).toMatch(/^shop\s+orders\s+5\s+5\s+QuorumAvailable/m);
    expect(out).toMatch(/^sessions-2\s+10\.244\.0\.\d+\s+true\s+0$/m);
    expect(out).toMatch(/^DriftCorrected\s+StatefulSet\/orders: restored spec\.replicas \(changed by kubectl/m);
    expect(out).toMatch(/^orders\s+5\/5\s/m);
    // Deleted: no generated object, and no pod in either namespace.
    expect(out).toMatch(/-l app\.kubernetes\.io\/name=distributedkv,app\.kubernetes\.io\/managed-by=dkv\nNo resources found\./);
    expect(out).toMatch(/\$ kubectl get pods -n dev\nNo resources found\.\n\$ kubectl get pods -n shop\nNo resources found\./);
    // The claims stay, as the generated retention policy says: the orders members' on the class their spec names.
    expect(out).toMatch(/^shop\s+data-orders-4\s+Bound\s+fast-ssd$/m);
    expect(out).toMatch(/^dev\s+data-sessions-2\s+Bound\s+dkv-local$/m);
    expect(out).toMatch(/== done on a real node: 3 clusters converged as real etcd containers, drift undone by the controller pod, all deleted, in [\d.]+ s/);
    console.log(out.split('\n').filter((l) => l.startsWith('== ')).join('\n'));

    // Nothing of the node is left: its dir, network namespace, cgroups, mounts or processes.
    const [, name, dir] = /^node (dkv-node-\w+): everything it writes in (\S+),/m.exec(out) ?? [];
    expect(name).toBeDefined();
    expect(existsSync(dir)).toBe(false);
    expect(existsSync(`/run/netns/${name}`)).toBe(false);
    const hierarchies = existsSync('/sys/fs/cgroup/cgroup.controllers') ? ['/sys/fs/cgroup'] : readdirSync('/sys/fs/cgroup').map((h) => join('/sys/fs/cgroup', h));
    expect(hierarchies.filter((h) => existsSync(join(h, name)))).toEqual([]);
    expect(readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.includes(dir))).toEqual([]);
    expect(processesNaming(dir)).toEqual([]);
  }, REAL_NODE_BUILD_MS + 660_000);
});
