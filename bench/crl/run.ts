/**
 * What the members' CRL costs a client (issue 41, docs/client-identities.md
 * "Revocation"): etcd reads its `--client-crl-file` again on every
 * connection it accepts and compares every revoked serial with the
 * client's chain, so a CRL that grows with revoked client certificates is
 * paid on each new connection. This times new connections (a TLS handshake
 * with the client certificate, then one range request: `agent: false`, no
 * keep-alive) against one real etcd member started from the generated
 * StatefulSet and Secrets, with its CRL empty and with 1,000 revoked serials
 * (signed by the cluster's CA, as the controller writes it), in one run.
 * Rounds alternate the two lists (the mounted file swapped as a kubelet
 * does) so that neither gets the machine's quieter moments. Prints the empty
 * list's figures beside the long one's; never fails on a number.
 *
 *   npm run bench:crl -- [--connections 1000] [--concurrency 4] [--rounds 4] [--revoked 1000]
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadDefaultConfig } from '../../api/config.js';
import { REVOCATION_LIST_KEY, revocationListData } from '../../engines/etcd/certificates.js';
import { clusterIdentity } from '../../model/cluster-identity.js';
import { tlsSecretNames } from '../../engines/etcd/tls-files.js';
import { locateBinaries } from '../../test/cluster/control-plane.js';
import { b64, startLocalEtcdCluster } from '../../test/support/etcd-members.js';
import type { EtcdClientTls } from '../../engines/etcd/etcd-http.js';
import { runtimeAndMachine } from '../machine.js';
import { percentile } from '../percentile.js';

const { values } = parseArgs({
  options: {
    connections: { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '4' },
    revoked: { type: 'string', default: '1000' },
  },
});
const connections = Number(values.connections);
const concurrency = Number(values.concurrency);
const rounds = Number(values.rounds);
const revokedCount = Number(values.revoked);

type List = 'empty' | 'long';

/** One new connection with the client certificate and one range request on it; its time in ms, or undefined if it failed. */
function connectAndRange(url: string, tls: EtcdClientTls): Promise<number | undefined> {
  const body = JSON.stringify({ key: b64('bench/crl') });
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = request(`${url}/v3/kv/range`, {
      method: 'POST', ca: tls.ca, cert: tls.cert, key: tls.key, agent: false, timeout: 10_000,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200 ? performance.now() - t0 : undefined));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', () => resolve(undefined));
    req.end(body);
  });
}

async function load(url: string, tls: EtcdClientTls): Promise<{ latencies: number[]; failed: number; seconds: number }> {
  const latencies: number[] = [];
  let failed = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < connections) {
      next++;
      const ms = await connectAndRange(url, tls);
      if (ms === undefined) failed++;
      else latencies.push(ms);
    }
  }));
  return { latencies, failed, seconds: (performance.now() - started) / 1000 };
}

async function main(): Promise<void> {
  const binDir = locateBinaries(['etcd']);
  const dir = mkdtempSync(join(tmpdir(), 'dkv-bench-crl-'));
  const { cluster, pods, client, secrets } = await startLocalEtcdCluster(1, binDir, dir);
  try {
    const config = loadDefaultConfig();
    const names = tlsSecretNames(config, clusterIdentity('kv', config));
    const authority = secrets.get(names.authority)!;
    const ca = { certificate: authority['ca.crt'], privateKey: authority['ca.key'] };
    const member = secrets.get(names.member)!;
    const now = new Date();
    const notAfter = new Date(now.getTime() + 90 * 86_400_000);
    // Serials as the controller's certificates have them: 16 random bytes.
    const serials = Array.from({ length: revokedCount }, () => ({ serial: randomBytes(16).toString('hex').toUpperCase(), notAfter }));
    const lists: Record<List, string> = {
      empty: await revocationListData(ca, [], now, config),
      long: await revocationListData(ca, serials, now, config),
    };
    const use = async (list: List) => {
      secrets.set(names.member, { ...member, [REVOCATION_LIST_KEY]: lists[list] });
      await cluster.refreshSecrets();
    };
    const url = (await cluster.address(pods[0])).clientUrl;
    const results = new Map<List, { latencies: number[]; failed: number; seconds: number }>();
    for (let round = 0; round < rounds; round++) {
      for (const list of (round % 2 === 0 ? ['empty', 'long'] : ['long', 'empty']) as List[]) {
        await use(list);
        const run = await load(url, client);
        const sum = results.get(list) ?? { latencies: [], failed: 0, seconds: 0 };
        results.set(list, { latencies: [...sum.latencies, ...run.latencies], failed: sum.failed + run.failed, seconds: sum.seconds + run.seconds });
      }
    }
    console.log(`${connections} new connections x ${rounds} rounds per list, ${concurrency} at a time, each a TLS handshake with a client certificate and one range, to 1 member; CRL of ${revokedCount} serials ${Buffer.byteLength(lists.long, 'latin1')} B, empty ${Buffer.byteLength(lists.empty, 'latin1')} B; ${runtimeAndMachine()}, ${new Date().toISOString()}`);
    console.log('CRL            p50 ms  p99 ms  conn/s  failed   (empty CRL baseline: p50 / p99 / conn/s)');
    const figures = (list: List) => {
      const r = results.get(list)!;
      const sorted = [...r.latencies].sort((a, b) => a - b);
      return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), rate: r.latencies.length / r.seconds, failed: r.failed };
    };
    const empty = figures('empty');
    for (const list of ['empty', 'long'] as List[]) {
      const f = figures(list);
      const beside = list === 'long' ? `   (${empty.p50.toFixed(2)} / ${empty.p99.toFixed(2)} / ${empty.rate.toFixed(0)})` : '';
      const label = list === 'long' ? `${revokedCount} serials` : 'empty';
      console.log(`${label.padEnd(14)} ${f.p50.toFixed(2).padStart(6)}  ${f.p99.toFixed(2).padStart(6)}  ${f.rate.toFixed(0).padStart(6)}  ${String(f.failed).padStart(6)}${beside}`);
    }
  } finally {
    await cluster.stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (e) => {
  console.error(e);
  process.exit(1);
});
