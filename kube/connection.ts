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
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parse } from 'yaml';
import type { KubeConfig } from '@kubernetes/client-node';

export interface Connection {
  /** `https://host:port`, without a trailing slash. */
  readonly server: string;
  /** TLS material and auth headers for the next request (tokens may rotate, so ask each time). */
  requestOptions(): Promise<RequestOptions>;
  /** The server refused the credentials (401): re-read whatever can be re-read before the next request. */
  unauthorized?(): void;
}

export interface ConnectionOptions {
  /** Bound service-account tokens rotate: a token file is re-read this often, and after any 401. @default 60000 */
  readonly tokenRefreshMs?: number;
}

const SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';
const TOKEN_REFRESH_MS = 60_000;

/** A token file's content, re-read every `refreshMs` and at once after `expire()`. */
function fileReader(path: string, refreshMs: number): { read: () => string; expire: () => void } {
  let value = '';
  let readAt: number | undefined;
  return {
    read: () => {
      if (readAt === undefined || performance.now() - readAt >= refreshMs) {
        value = readFileSync(path, 'utf8').trim();
        readAt = performance.now();
      }
      return value;
    },
    expire: () => {
      readAt = undefined;
    },
  };
}

function staticConnection(server: string, tls: RequestOptions, token?: { read: () => string; expire?: () => void }): Connection {
  return {
    server: server.replace(/\/$/, ''),
    requestOptions: async () => (token ? { ...tls, headers: { Authorization: `Bearer ${token.read()}` } } : tls),
    unauthorized: () => token?.expire?.(),
  };
}

function inClusterConnection(options: ConnectionOptions): Connection {
  const host = process.env.KUBERNETES_SERVICE_HOST!;
  const port = process.env.KUBERNETES_SERVICE_PORT ?? '443';
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return staticConnection(server, { ca: readFileSync(join(SERVICE_ACCOUNT, 'ca.crt')) }, fileReader(join(SERVICE_ACCOUNT, 'token'), options.tokenRefreshMs ?? TOKEN_REFRESH_MS));
}

/**
 * The kubeconfig that was named, or that kubectl's rules find, cannot be
 * used: a mistake in the user's input, reported as input errors are (the
 * file first, then what is wrong with it), never as an internal error.
 * `dkv` tells it apart by its name, as it does the controller's UsageError.
 */
export class KubeconfigError extends Error {
  constructor(readonly file: string, readonly problem: string) {
    super(`${file}: ${problem}`);
    this.name = 'KubeconfigError';
  }
}

/** Where credentials come from: kubeconfig files (merged in order), or the pod's service account. */
export type CredentialSource = { readonly kubeconfigs: readonly string[] } | { readonly inCluster: true };

export interface CredentialEnvironment {
  /** `--kubeconfig`, if given. */
  readonly flag?: string;
  /** `$KUBECONFIG`. */
  readonly env?: string;
  readonly home: string;
  readonly exists: (path: string) => boolean;
  /** Whether the process runs in a pod (KUBERNETES_SERVICE_HOST is set). */
  readonly inCluster: boolean;
}

/**
 * kubectl's rules, with one difference that matters in a pod: a kubeconfig
 * named explicitly (`--kubeconfig`, or a `$KUBECONFIG` none of whose files
 * exists) that is missing is an error, never a silent fall back to the
 * pod's own service account, which may have quite different rights. Only
 * when nothing was named and ~/.kube/config does not exist are the pod's
 * credentials used. `$KUBECONFIG` is a list (`a:b`), merged in order; files
 * of it that do not exist are skipped, as kubectl skips them.
 */
export function credentialSource(environment: CredentialEnvironment): CredentialSource {
  if (environment.flag) {
    if (!environment.exists(environment.flag)) throw new KubeconfigError(environment.flag, 'kubeconfig file does not exist');
    return { kubeconfigs: [environment.flag] };
  }
  const listed = (environment.env ?? '').split(delimiter).filter(Boolean);
  if (listed.length > 0) {
    const present = listed.filter((p) => environment.exists(p));
    if (present.length === 0) throw new KubeconfigError(listed.join(delimiter), 'no kubeconfig found: none of the files $KUBECONFIG names exists');
    return { kubeconfigs: present };
  }
  const home = join(environment.home, '.kube', 'config');
  if (environment.exists(home)) return { kubeconfigs: [home] };
  if (environment.inCluster) return { inCluster: true };
  throw new KubeconfigError(home, 'no kubeconfig found (none named by --kubeconfig or $KUBECONFIG, and none here) and not running in a cluster');
}

/** The fields of a kubeconfig read here, spelled as kubectl writes them; the rest is ignored. */
interface KubeconfigCluster {
  readonly server?: string;
  readonly 'certificate-authority'?: string;
  readonly 'certificate-authority-data'?: string;
  readonly 'insecure-skip-tls-verify'?: boolean;
  readonly 'tls-server-name'?: string;
}
interface KubeconfigUser {
  readonly 'client-certificate'?: string;
  readonly 'client-certificate-data'?: string;
  readonly 'client-key'?: string;
  readonly 'client-key-data'?: string;
  readonly token?: string;
  readonly tokenFile?: string;
  readonly username?: string;
  readonly password?: string;
  readonly exec?: unknown;
  readonly 'auth-provider'?: unknown;
}
interface KubeconfigContext { readonly cluster: string; readonly user?: string }
interface NamedEntry { readonly name: string; readonly cluster?: KubeconfigCluster; readonly user?: KubeconfigUser; readonly context?: KubeconfigContext }
interface Kubeconfig { 'current-context'?: string; clusters: NamedEntry[]; users: NamedEntry[]; contexts: NamedEntry[] }

function pick<K extends 'cluster' | 'user' | 'context'>(file: string, entries: NamedEntry[], name: string, key: K): NonNullable<NamedEntry[K]> {
  const entry = entries.find((e) => e.name === name)?.[key];
  if (!entry) throw new KubeconfigError(file, `kubeconfig: ${key} ${JSON.stringify(name)} not found`);
  return entry as NonNullable<NamedEntry[K]>;
}

function parseKubeconfig(path: string): Partial<Kubeconfig> {
  try {
    return (parse(readFileSync(path, 'utf8')) ?? {}) as Partial<Kubeconfig>;
  } catch (e) {
    throw new KubeconfigError(path, `not a readable kubeconfig: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
  }
}

/** Merges kubeconfig files as kubectl does: the first file to name an entry (or current-context) wins. */
function readKubeconfigs(paths: readonly string[]): { config: Kubeconfig; dirOf: Map<object, string> } {
  const config: Kubeconfig = { clusters: [], users: [], contexts: [] };
  const dirOf = new Map<object, string>();
  for (const path of paths) {
    if (!existsSync(path)) continue;
    const file = parseKubeconfig(path);
    config['current-context'] ??= file['current-context'];
    for (const list of ['clusters', 'users', 'contexts'] as const) {
      for (const entry of file[list] ?? []) {
        if (config[list].some((e) => e.name === entry.name)) continue;
        config[list].push(entry);
        for (const inner of [entry.cluster, entry.user]) if (inner) dirOf.set(inner, dirname(path));
      }
    }
  }
  return { config, dirOf };
}

/**
 * The connection for a kubeconfig file, the files of $KUBECONFIG, or
 * ~/.kube/config, or the pod's service account: see credentialSource.
 */
export function loadConnection(kubeconfigPath?: string, options: ConnectionOptions = {}): Connection {
  const source = credentialSource({ flag: kubeconfigPath, env: process.env.KUBECONFIG, home: homedir(), exists: existsSync, inCluster: Boolean(process.env.KUBERNETES_SERVICE_HOST) });
  if ('inCluster' in source) return inClusterConnection(options);
  const paths = source.kubeconfigs;
  const { config, dirOf } = readKubeconfigs(paths);
  const files = paths.join(delimiter);
  const contextName = config['current-context'];
  if (!contextName) throw new KubeconfigError(files, 'kubeconfig: no current-context');
  const context = pick(files, config.contexts, contextName, 'context');
  const cluster = pick(files, config.clusters, context.cluster, 'cluster');
  const user: KubeconfigUser = context.user ? pick(files, config.users, context.user, 'user') : {};
  if (!cluster.server) throw new KubeconfigError(files, `kubeconfig: cluster ${JSON.stringify(context.cluster)} has no server`);

  if (user.exec || user['auth-provider']) return clientNodeConnection(cluster.server, paths);

  const base = (entry: object) => dirOf.get(entry) ?? process.cwd();
  const material = (entry: KubeconfigCluster | KubeconfigUser, field: 'certificate-authority' | 'client-certificate' | 'client-key'): Buffer | undefined => {
    const fields = entry as Record<string, string | undefined>;
    const data = fields[`${field}-data`];
    if (data) return Buffer.from(data, 'base64');
    const file = fields[field];
    return file ? readFileSync(isAbsolute(file) ? file : join(base(entry), file)) : undefined;
  };
  const tls: RequestOptions = {
    ca: material(cluster, 'certificate-authority'),
    cert: material(user, 'client-certificate'),
    key: material(user, 'client-key'),
    rejectUnauthorized: cluster['insecure-skip-tls-verify'] !== true,
    servername: cluster['tls-server-name'],
  };
  const { token: literal, tokenFile } = user;
  const token = literal ? { read: () => literal }
    : tokenFile ? fileReader(isAbsolute(tokenFile) ? tokenFile : join(base(user), tokenFile), options.tokenRefreshMs ?? TOKEN_REFRESH_MS)
      : undefined;
  if (!token && user.username && user.password) {
    tls.headers = { Authorization: `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}` };
  }
  return staticConnection(cluster.server, tls, token);
}

/** Exec plugins and auth providers, through @kubernetes/client-node (imported on first use). */
function clientNodeConnection(server: string, paths: readonly string[]): Connection {
  let kubeConfig: Promise<KubeConfig> | undefined;
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
