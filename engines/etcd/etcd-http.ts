/**
 * One POST to a member's v3 HTTP/JSON gateway, over plain HTTP or, where
 * the client listener uses TLS, over TLS with the client certificate (the
 * member refuses a client without one of its CA). Node's own http and https
 * modules: fetch cannot present a client certificate without a dispatcher
 * from a package the toolkit does not ship.
 */
import { Agent, request as httpsRequest } from 'node:https';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/**
 * node:http through require, not an ES import: importing a built-in module reads every one of its exports, and
 * three of node:http's (WebSocket, CloseEvent, MessageEvent) load undici, Node's fetch, which nothing here calls:
 * some 10 ms of every `dkv backup`'s start before the snapshot is asked for (test/backup/backup-start.test.ts).
 */
const { request: httpRequest } = createRequire(import.meta.url)('node:http') as typeof import('node:http');

/** A client certificate, its key and the CA that signed the members' certificate, PEM. */
export interface EtcdClientTls {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
  /**
   * A user to authenticate as where etcd authentication is on (client identities: the root user,
   * engines/etcd/etcd-auth.ts); the certificate then has no common name, which the gateway refuses.
   */
  readonly login?: { readonly user: string; readonly password: string };
}

/** The files of a mounted client Secret (tls.crt, tls.key, ca.crt), as cert-manager and the controller write them. */
export function clientTlsFromDirectory(dir: string): EtcdClientTls {
  const tls = { ca: readFileSync(join(dir, 'ca.crt'), 'utf8'), cert: readFileSync(join(dir, 'tls.crt'), 'utf8'), key: readFileSync(join(dir, 'tls.key'), 'utf8') };
  // The root identity's Secret (client identities: etcd authentication on) adds the user and its password.
  if (!existsSync(join(dir, 'password'))) return tls;
  return { ...tls, login: { user: readFileSync(join(dir, 'username'), 'utf8').trim(), password: readFileSync(join(dir, 'password'), 'utf8').trim() } };
}

/** Agents by certificate: every reconcile makes a membership client, and each would otherwise keep connections of its own open. */
const agents = new Map<string, Agent>();
/** About one per cluster the process talks to; past it the oldest is closed (a new one opens on its next call). */
const MAX_AGENTS = 1024;

/**
 * A keep-alive agent presenting the client certificate and trusting only the
 * cluster's CA (never the system's roots), shared by every client with the
 * same certificate. Idle sockets are unreferenced: they keep no process alive.
 */
export function tlsAgent(tls: EtcdClientTls): Agent {
  const key = `${tls.ca}\0${tls.cert}`;
  let agent = agents.get(key);
  if (!agent) {
    agent = new Agent({ ca: tls.ca, cert: tls.cert, key: tls.key, keepAlive: true, maxSockets: 8 });
    agents.set(key, agent);
    if (agents.size > MAX_AGENTS) {
      const [oldest, old] = agents.entries().next().value!;
      agents.delete(oldest);
      old.destroy();
    }
  }
  return agent;
}

export interface EtcdAnswer {
  readonly status: number;
  readonly text: string;
}

/** POSTs `body` (JSON) to `url`; `agent` for https:// URLs; `token` an etcd auth token. Rejects on a network or TLS failure and on `signal`. */
export function postJson(url: string, body: string, signal: AbortSignal, agent?: Agent, token?: string): Promise<EtcdAnswer> {
  return new Promise((resolve, reject) => {
    const secure = url.startsWith('https:');
    if (secure && !agent) {
      reject(new Error('an https:// member needs the client certificate (the cluster runs client TLS)'));
      return;
    }
    // Accept: etcd tells its gateway's own calls from a client's by it (grpcgateway-accept); without it, once authentication is on,
    // a call carries the member certificate's common name as its user (server/auth/store.go AuthInfoFromTLS).
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json', 'Content-Length': Buffer.byteLength(body), ...(token ? { Authorization: token } : {}) };
    const options = { method: 'POST', headers, signal };
    const req = secure ? httpsRequest(url, { ...options, agent }) : httpRequest(url, options);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}
