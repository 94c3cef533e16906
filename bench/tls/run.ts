/**
 * What TLS costs a client: put and range latency (p50, p99) and throughput
 * over TLS with a client certificate against plain HTTP, on the same three
 * real etcd members in one run. The members start from the generated
 * StatefulSet and Secrets (TLS on both listeners, as the controller issues
 * them); then each restarts on the same data with one more client listener,
 * plain HTTP on another port, so both schemes reach the same processes, the
 * same raft group and the same disks. Rounds alternate plain and TLS so that
 * neither gets the machine's quieter moments. Keep-alive connections on both
 * (what a real client keeps). Prints the plain baseline beside each TLS
 * figure; never fails on a number.
 *
 *   npm run bench:tls -- [--requests 2000] [--concurrency 8] [--rounds 3] [--value-bytes 256]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, launch, locateBinaries, terminate } from '../../test/cluster/control-plane.js';
import { b64, startLocalEtcdCluster } from '../../test/support/etcd-members.js';
import { eventually } from '../../test/support/eventually.js';
import { httpProbe } from '../../test/support/http-probe.js';
import type { Agent } from 'node:https';
import { postJson, tlsAgent } from '../../engines/etcd/etcd-http.js';
import { runtimeAndMachine } from '../machine.js';
import { percentile } from '../percentile.js';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '3' },
    'value-bytes': { type: 'string', default: '256' },
  },
});
const requests = Number(values.requests);
const concurrency = Number(values.concurrency);
const rounds = Number(values.rounds);
const value = b64('v'.repeat(Number(values['value-bytes'])));

type Scheme = 'plain' | 'tls';
type Op = 'put' | 'range';

/** `requests` calls of `op`, `concurrency` at a time, each timed; a failed call is counted, never retried. */
async function load(url: string, op: Op, agent: Agent | undefined): Promise<{ latencies: number[]; failed: number; seconds: number }> {
  const latencies: number[] = [];
  let failed = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < requests) {
      const i = next++;
      const key = b64(`bench/${String(i % 1000).padStart(4, '0')}`);
      const body = op === 'put' ? { key, value } : { key };
      const t0 = performance.now();
      try {
        const answer = await postJson(`${url}/v3/kv/${op}`, JSON.stringify(body), AbortSignal.timeout(10_000), agent);
        if (answer.status !== 200) failed++;
        else latencies.push(performance.now() - t0);
      } catch {
        failed++;
      }
    }
  }));
  return { latencies, failed, seconds: (performance.now() - started) / 1000 };
}

async function main(): Promise<void> {
  const binDir = locateBinaries(['etcd']);
  const dir = mkdtempSync(join(tmpdir(), 'dkv-bench-tls-'));
  const { cluster, pods, client } = await startLocalEtcdCluster(3, binDir, dir);
  const restarted: ReturnType<typeof launch>[] = [];
  try {
    // Each member again, on its data, with a plain client listener beside the TLS one.
    const plainUrls = new Map<string, string>();
    const members = pods.map((pod) => cluster.members.get(pod)!);
    await cluster.stopAll();
    for (const member of members) {
      const plain = `http://127.0.0.1:${await freePort()}`;
      plainUrls.set(member.name, plain);
      const args = member.args.map((a) => (a.startsWith('--listen-client-urls=') ? `${a},${plain}` : a));
      restarted.push(launch(join(binDir, 'etcd'), args, `${member.log}.bench`, { ...member.environment }));
    }
    await eventually('3 members ready again', async () => {
      for (const member of members) if ((await httpProbe(`${member.metricsUrl}/readyz`)).status !== 200) return undefined;
      return true;
    }, 60_000, 100);

    const target = pods[0];
    const urls: Record<Scheme, string> = { plain: plainUrls.get(target)!, tls: members[0].clientUrl };
    // Plain: Node's global agent, keep-alive by default; TLS: the client certificate's keep-alive agent, as the controller's.
    const agents: Record<Scheme, Agent | undefined> = { plain: undefined, tls: tlsAgent(client) };
    const results = new Map<string, { latencies: number[]; failed: number; seconds: number }>();
    for (let round = 0; round < rounds; round++) {
      const order: Scheme[] = round % 2 === 0 ? ['plain', 'tls'] : ['tls', 'plain'];
      for (const op of ['put', 'range'] as Op[]) {
        for (const scheme of order) {
          const run = await load(urls[scheme], op, agents[scheme]);
          const key = `${op}/${scheme}`;
          const sum = results.get(key) ?? { latencies: [], failed: 0, seconds: 0 };
          results.set(key, { latencies: [...sum.latencies, ...run.latencies], failed: sum.failed + run.failed, seconds: sum.seconds + run.seconds });
        }
      }
    }
    console.log(`${requests} requests x ${rounds} rounds per op and scheme, ${concurrency} at a time, ${Number(values['value-bytes'])} B values, to ${target} of 3 members (the same processes); ${runtimeAndMachine()}, ${new Date().toISOString()}`);
    console.log('op     scheme  p50 ms  p99 ms  req/s   failed   (plain baseline: p50 / p99 / req/s)');
    for (const op of ['put', 'range'] as Op[]) {
      const figures = (scheme: Scheme) => {
        const r = results.get(`${op}/${scheme}`)!;
        const sorted = [...r.latencies].sort((a, b) => a - b);
        return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), rate: r.latencies.length / r.seconds, failed: r.failed };
      };
      const plain = figures('plain');
      const tls = figures('tls');
      for (const [scheme, f] of [['plain', plain], ['tls', tls]] as const) {
        const beside = scheme === 'tls' ? `   (${plain.p50.toFixed(2)} / ${plain.p99.toFixed(2)} / ${plain.rate.toFixed(0)})` : '';
        console.log(`${op.padEnd(6)} ${scheme.padEnd(7)} ${f.p50.toFixed(2).padStart(6)}  ${f.p99.toFixed(2).padStart(6)}  ${f.rate.toFixed(0).padStart(6)}  ${String(f.failed).padStart(6)}${beside}`);
      }
    }
  } finally {
    for (const child of restarted) await terminate(child);
    await cluster.stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (e) => {
  console.error(e);
  process.exit(1);
});
