/**
 * A linearizability check of real etcd members while the controller acts on
 * them, as etcd's own robustness tests do for etcd itself: concurrent
 * clients (8 by default) put, get, delete and compare-and-swap a small set
 * of keys through any member, each operation recorded with its call and
 * return times on one monotonic clock; then porcupine (test/cluster/porcupine,
 * built from the Go module proxy) says whether the history is linearizable.
 * A write whose outcome the client could not learn (a timeout, a member going
 * away) may or may not have taken effect, and is checked as either; a failed
 * read is left out. A final read of every key after the load ends makes an
 * acknowledged write that was lost a violation too.
 *
 * Every load is bounded: it stops when asked, and by itself after
 * `maxOperationsPerClient`.
 */
import { spawn, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../../api/package-root.js';
import { b64, etcdPost } from './etcd-members.js';

export interface HistoryOperation {
  readonly client: number;
  readonly kind: 'put' | 'get' | 'delete' | 'cas';
  readonly key: string;
  readonly value?: string;
  readonly expect?: string;
  /** False when the client cannot tell whether a write took effect. */
  readonly known: boolean;
  readonly found?: string;
  readonly swapped?: boolean;
  /** Microseconds on the recorder's monotonic clock. */
  readonly call: number;
  readonly return: number;
  /** Why a write's outcome is unknown (for a reader of the history; the checker ignores it). */
  readonly error?: string;
}

export interface LoadOptions {
  readonly clients?: number;
  readonly keys?: number;
  /** A pause between one client's operations: the load must not starve the members it watches. */
  readonly pauseMs?: number;
  readonly maxOperationsPerClient?: number;
  readonly timeoutMs?: number;
}

export interface LinearizabilityResult {
  readonly result: 'Ok' | 'Illegal' | 'Unknown';
  readonly operations: number;
  readonly keys: number;
  /** Writes acknowledged, writes whose outcome is unknown, reads that failed and were left out. */
  readonly acknowledgedWrites: number;
  readonly unknownWrites: number;
  readonly failedReads: number;
  /** porcupine's visualization, written when the history is not linearizable. */
  readonly visualization?: string;
}

/** A call that failed before any byte reached a member: nothing it asked for can have happened. */
const NEVER_SENT = /ECONNREFUSED|connect ECONNREFUSED|ENOTFOUND|EHOSTUNREACH/;

const decode = (v: string | undefined) => (v === undefined ? undefined : Buffer.from(v, 'base64').toString());

/** Records a history of concurrent operations against whatever members `endpoints` names at each call. */
export class HistoryRecorder {
  private readonly operations: HistoryOperation[] = [];
  private readonly started = process.hrtime.bigint();
  private running = false;
  private clients: Promise<void>[] = [];
  private failedReads = 0;
  private unsentWrites = 0;
  private readonly options: Required<LoadOptions>;
  /** Keys of their own: every key starts absent, which is the model's first state, whatever earlier loads wrote. */
  private readonly prefix = `lin/${randomBytes(4).toString('hex')}/`;

  constructor(private readonly endpoints: () => readonly string[], options: LoadOptions = {}) {
    this.options = { clients: 8, keys: 8, pauseMs: 25, maxOperationsPerClient: 6000, timeoutMs: 3000, ...options };
  }

  private now(): number {
    return Number((process.hrtime.bigint() - this.started) / 1000n);
  }

  start(): void {
    this.running = true;
    this.clients = Array.from({ length: this.options.clients }, (_, client) => this.client(client));
  }

  /** Stops the clients, then reads every key once more through `finalEndpoint`: the state every acknowledged write must explain. */
  async stop(finalEndpoint: string): Promise<HistoryOperation[]> {
    this.running = false;
    await Promise.all(this.clients);
    for (let k = 0; k < this.options.keys; k++) {
      const key = `${this.prefix}${k}`;
      const call = this.now();
      const read = await etcdPost(finalEndpoint, '/v3/kv/range', { key: b64(key) }, 10_000);
      this.operations.push({ client: this.options.clients, kind: 'get', key, found: decode(read.kvs?.[0]?.value), known: true, call, return: this.now() });
    }
    // An unknown outcome may take effect at any time after its call: its return is after everything else.
    const end = this.now() + 1;
    return this.operations.map((o) => (o.known ? o : { ...o, return: end }));
  }

  get failedReadCount(): number {
    return this.failedReads;
  }

  /** Writes that never reached a member (its port refused the connection): left out, as they changed nothing. */
  get unsentWriteCount(): number {
    return this.unsentWrites;
  }

  private async client(client: number): Promise<void> {
    const { keys, pauseMs, maxOperationsPerClient, timeoutMs } = this.options;
    let lastSeen: string | undefined;
    for (let n = 0; this.running && n < maxOperationsPerClient; n++) {
      const endpoints = this.endpoints();
      const endpoint = endpoints[(client + n) % endpoints.length];
      const key = `${this.prefix}${(client * 7 + n * 3) % keys}`;
      const value = `c${client}-${n}`;
      const pick = (client * 31 + n * 17) % 20;
      const call = this.now();
      try {
        if (pick < 7) {
          await etcdPost(endpoint, '/v3/kv/put', { key: b64(key), value: b64(value) }, timeoutMs);
          this.operations.push({ client, kind: 'put', key, value, known: true, call, return: this.now() });
        } else if (pick < 14) {
          const read = await etcdPost(endpoint, '/v3/kv/range', { key: b64(key) }, timeoutMs);
          lastSeen = decode(read.kvs?.[0]?.value);
          this.operations.push({ client, kind: 'get', key, found: lastSeen, known: true, call, return: this.now() });
        } else if (pick < 16) {
          await etcdPost(endpoint, '/v3/kv/deleterange', { key: b64(key) }, timeoutMs);
          this.operations.push({ client, kind: 'delete', key, known: true, call, return: this.now() });
        } else {
          const expect = lastSeen ?? value;
          const answer = await etcdPost(endpoint, '/v3/kv/txn', {
            compare: [{ key: b64(key), target: 'VALUE', result: 'EQUAL', value: b64(expect) }],
            success: [{ requestPut: { key: b64(key), value: b64(value) } }],
          }, timeoutMs);
          this.operations.push({ client, kind: 'cas', key, value, expect, swapped: answer.succeeded === true, known: true, call, return: this.now() });
        }
      } catch (e) {
        // A read that failed changed nothing, nor did a write the member never received (refused connection). Any
        // other write that failed may have been applied before the answer was lost: its outcome is unknown.
        const cause = (e as { cause?: { code?: string; message?: string } }).cause;
        const error = [(e as Error).message, cause?.code ?? cause?.message ?? ''].join(' ').trim();
        if (pick >= 7 && pick < 14) this.failedReads++;
        else if (NEVER_SENT.test(error)) this.unsentWrites++;
        else if (pick < 7) this.operations.push({ client, kind: 'put', key, value, known: false, call, return: 0, error });
        else if (pick < 16) this.operations.push({ client, kind: 'delete', key, known: false, call, return: 0, error });
        else this.operations.push({ client, kind: 'cas', key, value, expect: lastSeen ?? value, known: false, call, return: 0, error });
      }
      await new Promise((r) => setTimeout(r, pauseMs));
    }
  }
}

/** test/cluster/porcupine/build.sh's checker (a cache hit once built). */
function checker(): string {
  const out = execFileSync('bash', [join(packageRoot(), 'test', 'cluster', 'porcupine', 'build.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return join(out.trim().split('\n').pop()!, 'dkv-linearizability');
}

/** Checks a recorded history with porcupine; a visualization of a violation is left in a temporary directory. */
export async function checkLinearizable(history: readonly HistoryOperation[], failedReads = 0, timeoutSeconds = 120): Promise<LinearizabilityResult> {
  const visualization = join(mkdtempSync(join(tmpdir(), 'dkv-linearizability-')), 'violation.html');
  const historyFile = join(visualization, '..', 'history.json');
  writeFileSync(historyFile, JSON.stringify(history));
  const child = spawn(checker(), ['-visualize', visualization, '-timeout', `${timeoutSeconds}s`], { stdio: ['pipe', 'pipe', 'inherit'] });
  child.stdin.end(JSON.stringify(history));
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  await new Promise((resolve) => child.on('close', resolve));
  const line = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as { result: LinearizabilityResult['result']; operations: number; keys: number };
  const writes = history.filter((o) => o.kind !== 'get');
  return {
    ...line, acknowledgedWrites: writes.filter((o) => o.known).length, unknownWrites: writes.filter((o) => !o.known).length, failedReads,
    ...(line.result === 'Illegal' ? { visualization } : {}),
  };
}

/**
 * Stops `load`, reads every key once more through `finalEndpoint`, checks the history with porcupine and prints
 * its figures: the history is linearizable (no acknowledged write lost), and the load ran through the action.
 */
export async function expectLinearizable(action: string, load: HistoryRecorder, finalEndpoint: string): Promise<LinearizabilityResult> {
  const history = await load.stop(finalEndpoint);
  const checked = await checkLinearizable(history, load.failedReadCount);
  console.log(`linearizability under ${action}: ${checked.result}; ${checked.operations} operations on ${checked.keys} keys, ${checked.acknowledgedWrites} acknowledged writes, `
    + `${checked.unknownWrites} of unknown outcome, ${checked.failedReads} failed reads and ${load.unsentWriteCount} writes never sent left out`
    + `${checked.visualization ? `; violation drawn in ${checked.visualization}` : ''}`);
  expect(checked.result).toBe('Ok');
  expect(checked.acknowledgedWrites).toBeGreaterThan(100); // the load ran through the action: the check is not vacuous
  return checked;
}
