/**
 * What clients see when the leader is defragmented: after a leadership
 * transfer (what the controller does, engines/etcd/defragmentation.ts) or in
 * place (what etcd-backup-restore and etcdctl's own rolling defragmentation
 * do; gardener/etcd-backup-restore issue 1052 asks for the transfer because
 * "all writes stall cluster-wide, including lease renewals").
 *
 * Both in one run, each on a fresh 5-member cluster started from the
 * generated StatefulSet, with the same fragmented database and the same
 * steady load at every member (a writer, a reader, a lease kept alive every
 * 200 ms; test/support/etcd-load.ts): only the leader's step differs. Prints,
 * for each: how long the leader's step took, failed requests (at the member
 * defragmented and elsewhere), the slowest write, read and lease renewal
 * elsewhere, and the longest stretch without an agreed leader. Never fails on
 * a number.
 *
 *   npm run bench:leader-defragmentation -- [--keys 6000] [--value-bytes 16384]
 *
 * 6000 keys of 16 KiB overwritten twice and compacted: about 215 MiB on disk,
 * half of it free, a defragmentation of one to a few seconds here.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { locateBinaries } from '../../test/cluster/control-plane.js';
import { ClientLoad, fragment, type Request, type RequestKind } from '../../test/support/etcd-load.js';
import { startLocalEtcdCluster } from '../../test/support/etcd-members.js';
import { InvariantMonitor } from '../../test/support/invariant-monitor.js';
import { runtimeAndMachine } from '../machine.js';

const MIB = 2 ** 20;
const { values } = parseArgs({ options: { keys: { type: 'string', default: '6000' }, 'value-bytes': { type: 'string', default: '16384' } } });
const keys = Number(values.keys);
const valueBytes = Number(values['value-bytes']);

type Way = 'after a transfer' | 'in place';

interface Outcome {
  readonly way: Way;
  readonly dbMiB: number;
  readonly stepMs: number;
  readonly requests: number;
  readonly failedAtMember: number;
  readonly failedElsewhere: string[];
  readonly slowestElsewhere: Record<RequestKind, number>;
  readonly longestElectionMs: number;
  readonly maxDown: number;
}

async function leaderStep(way: Way, binDir: string): Promise<Outcome> {
  const dir = mkdtempSync(join(tmpdir(), 'dkv-bench-leader-defrag-'));
  const { cluster, pods, membership } = await startLocalEtcdCluster(5, binDir, dir);
  const monitor = new InvariantMonitor(membership);
  const load = new ClientLoad(cluster, pods);
  try {
    await fragment(cluster.addressOf('kv-0').clientUrl, keys, valueBytes, 2);
    const before = await membership.status();
    const leader = before.members.find((m) => m.leader)!;
    monitor.start();
    load.start(20_000, { leases: true });
    await new Promise((r) => setTimeout(r, 2000)); // the load runs before the step
    const start = Date.now();
    if (way === 'after a transfer') await membership.moveLeader(before.members.find((m) => !m.leader)!.id);
    await membership.defragment(leader.name);
    const end = Date.now();
    await new Promise((r) => setTimeout(r, 3000)); // and after it: requests in flight finish or time out
    await load.stop();
    await monitor.stop();
    const during = (r: Request) => r.start < end && r.end > start;
    const elsewhere = load.requests.filter((r) => r.pod !== leader.name);
    const slowest = (kind: RequestKind) => Math.max(0, ...elsewhere.filter((r) => r.kind === kind && during(r) && !r.error).map((r) => r.end - r.start));
    return {
      way,
      dbMiB: leader.dbSizeBytes! / MIB,
      stepMs: end - start,
      requests: load.requests.length,
      failedAtMember: load.requests.filter((r) => r.pod === leader.name && r.error).length,
      failedElsewhere: elsewhere.filter((r) => r.error).map((r) => `${r.pod} ${r.kind}: ${r.error}`),
      slowestElsewhere: { put: slowest('put'), range: slowest('range'), keepalive: slowest('keepalive') },
      longestElectionMs: monitor.longestElectionMs,
      maxDown: monitor.maxDown(),
    };
  } finally {
    await load.stop();
    await monitor.stop();
    await cluster.stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const binDir = locateBinaries(['etcd']);
  console.log(`leader defragmentation under load, ${new Date().toISOString()}, ${runtimeAndMachine()}; ${keys} keys x ${valueBytes} B overwritten twice, 5 members`);
  const outcomes: Outcome[] = [];
  for (const way of ['after a transfer', 'in place'] as const) outcomes.push(await leaderStep(way, binDir));
  console.log('| leader defragmented | db | step | requests | failed at the leader | failed elsewhere | slowest elsewhere: put / range / lease renewal | longest without a leader | most members down |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const o of outcomes) {
    console.log(`| ${o.way} | ${o.dbMiB.toFixed(0)} MiB | ${o.stepMs} ms | ${o.requests} | ${o.failedAtMember} | ${o.failedElsewhere.length} | ${o.slowestElsewhere.put} / ${o.slowestElsewhere.range} / ${o.slowestElsewhere.keepalive} ms | ${o.longestElectionMs} ms | ${o.maxDown} |`);
  }
  for (const o of outcomes) for (const f of o.failedElsewhere) console.log(`  ${o.way}: ${f}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
