/**
 * How to reach and authenticate to the API server, from a kubeconfig or from
 * the pod's service account.
 *
 * Client certificates, bearer tokens and token files (what controllers run
 * with, in-cluster and in CI) are read here directly. Kubeconfigs that need
 * an exec plugin or an auth provider (cloud logins, OIDC) are handed to
 * @kubernetes/client-node, which implements them; it is imported only then,
 * because importing it loads every generated API model (~85 MB of resident
 * memory, more than the controller's whole cache for 1,000 clusters).
 */
import { existsSync, readFileSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { parse } from 'yaml';

export interface Connection {
  /** `https://host:port`, without a trailing slash. */
  readonly server: string;
  /** TLS material and auth headers for the next request (tokens may rotate, so ask each time). */
  requestOptions(): Promise<RequestOptions>;
}

const SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';
/** Bound service-account tokens rotate; re-read the file this often. */
const TOKEN_REFRESH_MS = 60_000;

function fileReader(path: string): () => string {
  let value = '';
  let readAt = 0;
  return () => {
    if (Date.now() - readAt > TOKEN_REFRESH_MS) {
      value = readFileSync(path, 'utf8').trim();
      readAt = Date.now();
    }
    return value;
  };
}

function staticConnection(server: string, tls: RequestOptions, token?: () => string): Connection {
  return {
    server: server.replace(/\/$/, ''),
    requestOptions: async () => (token ? { ...tls, headers: { Authorization: `Bearer ${token()}` } } : tls),
  };
}

function inClusterConnection(): Connection {
  const host = process.env.KUBERNETES_SERVICE_HOST!;
  const port = process.env.KUBERNETES_SERVICE_PORT ?? '443';
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return staticConnection(server, { ca: readFileSync(join(SERVICE_ACCOUNT, 'ca.crt')) }, fileReader(join(SERVICE_ACCOUNT, 'token')));
}

interface Named<T> { name: string; cluster?: T; user?: T; context?: T }

function pick<T>(entries: Named<T>[] | undefined, name: string, what: string, key: 'cluster' | 'user' | 'context'): T {
  const entry = entries?.find((e) => e.name === name)?.[key];
  if (!entry) throw new Error(`kubeconfig: ${what} ${JSON.stringify(name)} not found`);
  return entry;
}

/** Merges kubeconfig files as kubectl does: the first file to name an entry (or current-context) wins. */
function readKubeconfigs(paths: readonly string[]): { config: Record<string, any>; dirOf: Map<object, string> } {
  const config: Record<string, any> = { clusters: [], users: [], contexts: [] };
  const dirOf = new Map<object, string>();
  for (const path of paths) {
    if (!existsSync(path)) continue;
    const file = (parse(readFileSync(path, 'utf8')) ?? {}) as Record<string, any>;
    config['current-context'] ??= file['current-context'];
    for (const list of ['clusters', 'users', 'contexts'] as const) {
      for (const entry of file[list] ?? []) {
        if (config[list].some((e: { name: string }) => e.name === entry.name)) continue;
        config[list].push(entry);
        for (const inner of [entry.cluster, entry.user]) if (inner) dirOf.set(inner, dirname(path));
      }
    }
  }
  return { config, dirOf };
}

/**
 * The connection for a kubeconfig file (or $KUBECONFIG, or ~/.kube/config),
 * falling back to the pod's service account when there is no kubeconfig and
 * the process runs in a cluster.
 */
export function loadConnection(kubeconfigPath?: string): Connection {
  const paths = kubeconfigPath ? [kubeconfigPath] : (process.env.KUBECONFIG ?? join(homedir(), '.kube', 'config')).split(':').filter(Boolean);
  if (!paths.some((p) => existsSync(p))) {
    if (process.env.KUBERNETES_SERVICE_HOST) return inClusterConnection();
    throw new Error(`no kubeconfig found (${paths.join(', ')}) and not running in a cluster`);
  }
  const { config, dirOf } = readKubeconfigs(paths);
  const contextName = config['current-context'];
  if (!contextName) throw new Error('kubeconfig: no current-context');
  const context = pick<any>(config.contexts, contextName, 'context', 'context');
  const cluster = pick<any>(config.clusters, context.cluster, 'cluster', 'cluster');
  const user = context.user ? pick<any>(config.users, context.user, 'user', 'user') : {};
  if (!cluster.server) throw new Error(`kubeconfig: cluster ${JSON.stringify(context.cluster)} has no server`);

  if (user.exec || user['auth-provider']) return clientNodeConnection(cluster.server, paths);

  const base = (entry: object) => dirOf.get(entry) ?? process.cwd();
  const material = (entry: Record<string, any>, field: string): Buffer | undefined => {
    if (entry[`${field}-data`]) return Buffer.from(entry[`${field}-data`], 'base64');
    const file = entry[field];
    return file ? readFileSync(isAbsolute(file) ? file : join(base(entry), file)) : undefined;
  };
  const tls: RequestOptions = {
    ca: material(cluster, 'certificate-authority'),
    cert: material(user, 'client-certificate'),
    key: material(user, 'client-key'),
    rejectUnauthorized: cluster['insecure-skip-tls-verify'] !== true,
    servername: cluster['tls-server-name'],
  };
  const token = user.token ? () => user.token as string : user.tokenFile ? fileReader(isAbsolute(user.tokenFile) ? user.tokenFile : join(base(user), user.tokenFile)) : undefined;
  if (!token && user.username && user.password) {
    tls.headers = { Authorization: `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}` };
  }
  return staticConnection(cluster.server, tls, token);
}

/** Exec plugins and auth providers, through @kubernetes/client-node (imported on first use). */
function clientNodeConnection(server: string, paths: readonly string[]): Connection {
  let kubeConfig: Promise<any> | undefined;
  return {
    server: server.replace(/\/$/, ''),
    requestOptions: async () => {
      kubeConfig ??= import('@kubernetes/client-node').then(({ KubeConfig }) => {
        const kc = new KubeConfig();
        if (paths.length === 1) kc.loadFromFile(paths[0]);
        else kc.loadFromDefault();
        return kc;
      });
      const opts: RequestOptions = {};
      await (await kubeConfig).applyToHTTPSOptions(opts);
      return opts;
    },
  };
}

/** The same credentials against another server address (a proxy in tests, a port-forward). */
export function withServer(connection: Connection, server: string): Connection {
  return { server: server.replace(/\/$/, ''), requestOptions: () => connection.requestOptions() };
}

/** The server's address and CA of `connection`, authenticating with a bearer token instead (tests of RBAC). */
export function staticConnectionForTests(connection: Connection, token: string): Connection {
  return {
    server: connection.server,
    requestOptions: async () => {
      const { ca, servername, rejectUnauthorized } = await connection.requestOptions();
      return { ca, servername, rejectUnauthorized, headers: { Authorization: `Bearer ${token}` } };
    },
  };
}
