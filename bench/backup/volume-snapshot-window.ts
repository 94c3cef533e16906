/**
 * `npm run bench:snapshot-window`: how long a backup's store would be held
 * quiesced in the CSI path, the window from asking for a VolumeSnapshot to
 * seeing it cut (`status.creationTime`), as `dkv backup` measures it
 * (backup/volume-snapshot.ts), on the real snapshot controller from
 * kubernetes-csi/external-snapshotter. The CSI driver's part is played by
 * the test-side loop (TestCsiDriver, polling every 100 ms), which cuts a
 * snapshot as soon as it sees its content and reports it ready 1 s later:
 * the floor printed beside the window is the time until the driver cut
 * (the content's creationTime, on this machine's clock): the window less
 * the floor is what the snapshot controller's copy to the VolumeSnapshot
 * and the runner's own 200 ms polling add. Figures only; nothing is asserted.
 *
 *   --snapshots <n>   snapshots to cut, one after another (default 10)
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { VolumeSnapshots } from '../../backup/volume-snapshot.js';
import { KubeClient } from '../../kube/client.js';
import { realClock } from '../../kube/clock.js';
import { startControlPlane } from '../../test/cluster/control-plane.js';
import { createCsiStorageClasses, csiSnapshotterTools, snapshotCrds, startSnapshotController, TestCsiDriver } from '../../test/support/csi-snapshots.js';
import { eventually } from '../../test/support/eventually.js';
import { runtimeAndMachine } from '../machine.js';

const { values } = parseArgs({ options: { snapshots: { type: 'string', default: '10' } } });
const count = Number(values.snapshots);
const DRIVER = 'csi.dkv.bench';
const READY_DELAY_MS = 1000;

const dir = mkdtempSync(join(tmpdir(), 'dkv-bench-snapshots-'));
const tools = csiSnapshotterTools();
const plane = await startControlPlane(undefined, { withNodes: { crds: snapshotCrds(tools), count: 1 } });
const client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
const controller = await startSnapshotController(tools, plane);
const driver = new TestCsiDriver(client, { driver: DRIVER, snapshotsDir: join(dir, 'snapshots'), readyDelayMs: READY_DELAY_MS, volumePath: (claim) => join(dir, 'volumes', claim.uid) });
driver.start();
try {
  const { storageClass, snapshotClass } = await createCsiStorageClasses(client, DRIVER);
  await client.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench' } } });
  const claim = await client.request('POST', '/api/v1/namespaces/bench/persistentvolumeclaims', {
    body: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'data-kv-0' }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: storageClass, resources: { requests: { storage: '1Gi' } } } },
  });
  await eventually('the claim to be Bound', async () => ((await client.request('GET', '/api/v1/namespaces/bench/persistentvolumeclaims/data-kv-0')).status?.phase === 'Bound' ? true : undefined), 60_000, 100);
  mkdirSync(join(dir, 'volumes', claim.metadata.uid), { recursive: true });
  writeFileSync(join(dir, 'volumes', claim.metadata.uid, 'data'), 'x'.repeat(1 << 20));

  const snapshots = new VolumeSnapshots(client, realClock);
  const windows: number[] = [];
  const floors: number[] = [];
  const readies: number[] = [];
  for (let i = 0; i < count; i++) {
    const name = `kv-0-bench-${i}`;
    const askedAt = Date.now();
    const cut = await snapshots.cut({ namespace: 'bench', name, claim: 'data-kv-0', className: snapshotClass, labels: {}, annotations: {} }, 60_000);
    const cutAt = performance.now();
    await snapshots.ready('bench', name, 60_000);
    readies.push(performance.now() - cutAt);
    windows.push(cut.cutMs);
    // The floor: from asking to the moment the driver cut (the content's status.creationTime, in ns, on this machine's clock).
    const content = await client.request('GET', `/apis/snapshot.storage.k8s.io/v1/volumesnapshotcontents/snapcontent-${(await client.request('GET', `/apis/snapshot.storage.k8s.io/v1/namespaces/bench/volumesnapshots/${name}`)).metadata.uid}`);
    floors.push(Number(BigInt(content.status.creationTime) / 1_000_000n) - askedAt);
    await snapshots.delete('bench', name);
  }
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  const p = (xs: number[], q: number) => sorted(xs)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
  const row = (label: string, xs: number[]) => `${label.padEnd(70)}  p50 ${p(xs, 0.5).toFixed(0)} ms, max ${Math.max(...xs).toFixed(0)} ms`;
  process.stdout.write(`${count} snapshots of one bound claim, one after another; ${runtimeAndMachine()}\n`);
  process.stdout.write(`${row('window: VolumeSnapshot asked for -> cut seen (what a quiesced store waits)', windows)}\n`);
  process.stdout.write(`${row('floor: VolumeSnapshot asked for -> cut by the driver (its creationTime)', floors)}\n`);
  process.stdout.write(`${row(`cut -> ready to use (the driver reports ready ${READY_DELAY_MS} ms after the cut)`, readies)}\n`);
} finally {
  await driver.stop();
  await controller.stop();
  client.close();
  await plane.stop();
  rmSync(dir, { recursive: true, force: true });
}
