/**
 * Client load on real etcd members for the Day-2 scenarios that are judged
 * by what clients see (defragmentation, leadership moves): a database made
 * mostly of free pages, and a steady, bounded load of writes and reads at
 * every member with each request's outcome and timing recorded.
 */
import { b64, etcdPost, type LocalEtcdCluster } from './etcd-members.js';

/** Overwrites `keys` keys of `valueBytes` `rounds` times, then compacts: a database mostly of free pages. */
export async function fragment(clientUrl: string, keys: number, valueBytes: number, rounds: number): Promise<void> {
  const value = b64('x'.repeat(valueBytes));
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < keys; i += 50) {
      const success = Array.from({ length: Math.min(50, keys - i) }, (_, j) => ({ requestPut: { key: b64(`blob/${i + j}`), value } }));
      await etcdPost(clientUrl, '/v3/kv/txn', { success }, 30_000);
    }
  }
  const { header } = await etcdPost(clientUrl, '/v3/kv/range', { key: b64('blob/0') });
  await etcdPost(clientUrl, '/v3/kv/compaction', { revision: header.revision, physical: true }, 60_000);
}

export type RequestKind = 'put' | 'range' | 'keepalive';

export interface Request { readonly pod: string; readonly kind: RequestKind; readonly start: number; readonly end: number; readonly error?: string }

/**
 * A steady, bounded client load: one writer and one reader per member, each
 * a request at a time with a pause, until stopped or `max` requests each;
 * with `leases`, also one lease per member kept alive through that member
 * (what a Kubernetes API server's leader elections do, and what a write stall
 * at the leader delays first: lease renewals are the leader's).
 */
export class ClientLoad {
  readonly requests: Request[] = [];
  private stopped = false;
  private loops: Promise<void>[] = [];

  constructor(private readonly cluster: LocalEtcdCluster, private readonly pods: readonly string[]) {}

  start(max = 5_000, options: { leases?: boolean } = {}): void {
    const kinds: RequestKind[] = options.leases ? ['put', 'range', 'keepalive'] : ['put', 'range'];
    this.loops = this.pods.flatMap((pod) => kinds.map(async (kind) => {
      const lease = kind === 'keepalive' ? (await etcdPost(this.cluster.addressOf(pod).clientUrl, '/v3/lease/grant', { TTL: 30 }, 10_000)).ID : undefined;
      for (let n = 0; n < max && !this.stopped; n++) {
        const start = Date.now();
        // Read at each request: a client that moves to https (LocalEtcdCluster.useClientScheme) does so between two requests.
        const url = this.cluster.addressOf(pod).clientUrl;
        try {
          if (kind === 'put') await etcdPost(url, '/v3/kv/put', { key: b64(`load/${pod}`), value: b64(String(n)) }, 10_000);
          else if (kind === 'range') await etcdPost(url, '/v3/kv/range', { key: b64(`load/${pod}`) }, 10_000);
          else await etcdPost(url, '/v3/lease/keepalive', { ID: lease }, 10_000);
          this.requests.push({ pod, kind, start, end: Date.now() });
        } catch (e) {
          this.requests.push({ pod, kind, start, end: Date.now(), error: (e as Error).message });
        }
        await new Promise((r) => setTimeout(r, kind === 'keepalive' ? 200 : 20));
      }
    }));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
  }
}
