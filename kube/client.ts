import { Agent, request, type RequestOptions } from 'node:https';
import { JsonLines } from './json-lines.js';
import { loadConnection, type Connection, type ConnectionOptions } from './connection.js';

/** Where each kind this project touches lives in the API. */
const RESOURCES: Record<string, { plural: string; namespaced: boolean }> = {
  'v1/Namespace': { plural: 'namespaces', namespaced: false },
  'v1/Service': { plural: 'services', namespaced: true },
  'v1/Event': { plural: 'events', namespaced: true },
  'v1/ConfigMap': { plural: 'configmaps', namespaced: true },
  'v1/Pod': { plural: 'pods', namespaced: true },
  'v1/PersistentVolumeClaim': { plural: 'persistentvolumeclaims', namespaced: true },
  'v1/ServiceAccount': { plural: 'serviceaccounts', namespaced: true },
  'rbac.authorization.k8s.io/v1/ClusterRole': { plural: 'clusterroles', namespaced: false },
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': { plural: 'clusterrolebindings', namespaced: false },
  'rbac.authorization.k8s.io/v1/Role': { plural: 'roles', namespaced: true },
  'rbac.authorization.k8s.io/v1/RoleBinding': { plural: 'rolebindings', namespaced: true },
  'apps/v1/StatefulSet': { plural: 'statefulsets', namespaced: true },
  'apps/v1/Deployment': { plural: 'deployments', namespaced: true },
  'policy/v1/PodDisruptionBudget': { plural: 'poddisruptionbudgets', namespaced: true },
  'networking.k8s.io/v1/NetworkPolicy': { plural: 'networkpolicies', namespaced: true },
  'batch/v1/CronJob': { plural: 'cronjobs', namespaced: true },
  'batch/v1/Job': { plural: 'jobs', namespaced: true },
  'coordination.k8s.io/v1/Lease': { plural: 'leases', namespaced: true },
  'apiextensions.k8s.io/v1/CustomResourceDefinition': { plural: 'customresourcedefinitions', namespaced: false },
  'admissionregistration.k8s.io/v1/MutatingAdmissionPolicy': { plural: 'mutatingadmissionpolicies', namespaced: false },
  'admissionregistration.k8s.io/v1/MutatingAdmissionPolicyBinding': { plural: 'mutatingadmissionpolicybindings', namespaced: false },
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy': { plural: 'validatingadmissionpolicies', namespaced: false },
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding': { plural: 'validatingadmissionpolicybindings', namespaced: false },
  'example.com/v1alpha1/DistributedKV': { plural: 'distributedkvs', namespaced: true },
  'example.com/v1beta1/DistributedKV': { plural: 'distributedkvs', namespaced: true },
  'v1/Secret': { plural: 'secrets', namespaced: true },
  // The Prometheus Operator's kinds (docs/monitoring.md): served only where its CRDs are installed.
  'monitoring.coreos.com/v1/PodMonitor': { plural: 'podmonitors', namespaced: true },
  'monitoring.coreos.com/v1/ServiceMonitor': { plural: 'servicemonitors', namespaced: true },
  'monitoring.coreos.com/v1/PrometheusRule': { plural: 'prometheusrules', namespaced: true },
  // cert-manager's (spec.tls.mode cert-manager, docs/security.md): served only where its CRDs are installed.
  'cert-manager.io/v1/Certificate': { plural: 'certificates', namespaced: true },
  'cert-manager.io/v1/Issuer': { plural: 'issuers', namespaced: true },
};

/**
 * The collection path of a kind (`/apis/apps/v1/namespaces/ns/statefulsets`),
 * or of one object when `name` is given.
 */
export function resourcePath(apiVersion: string, kind: string, namespace?: string, name?: string): string {
  const resource = RESOURCES[`${apiVersion}/${kind}`];
  if (!resource) throw new Error(`unknown kind ${apiVersion}/${kind}`);
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const ns = resource.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${base}${ns}/${resource.plural}${name ? `/${encodeURIComponent(name)}` : ''}`;
}

const USER_AGENT = 'dkv-controller';

/** A non-2xx answer from the API server, with its Status reason (`NotFound`, `Conflict`, `Invalid`, …). */
export class KubeApiError extends Error {
  constructor(readonly status: number, readonly reason: string, message: string, readonly body: unknown) {
    super(message);
    this.name = 'KubeApiError';
  }

  /** From a failed response: the server's Status (reason, message) when the body is one, else the body's text. */
  static fromResponse(status: number, text: string): KubeApiError {
    const body = parseJson(text);
    const fields = (body && typeof body === 'object' ? body : {}) as { reason?: string; message?: string };
    return new KubeApiError(status, fields.reason ?? String(status), fields.message ?? text, body ?? text);
  }
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined; // not JSON: an error page from a proxy, say
  }
}

/** TCP keepalive on watch connections: probes start after this much silence. */
const WATCH_KEEPALIVE_MS = 30_000;

export interface WatchOptions {
  /**
   * End the watch with a WatchIdleError when nothing at all arrives for this
   * long (no event, no bookmark, not even the response headers): the
   * connection is dead even if no error says so.
   */
  readonly idleTimeoutMs?: number;
  /** Called whenever the stream shows life: headers, any bytes. */
  readonly onActivity?: () => void;
  /** Called with the size of every chunk of the stream's body, in bytes (what a watch costs the network). */
  readonly onBytes?: (bytes: number) => void;
  /** The Accept header. @default application/json */
  readonly accept?: string;
}

/** A watch that went silent past its idle timeout: its connection is presumed dead. */
export class WatchIdleError extends Error {
  constructor(readonly idleTimeoutMs: number) {
    super(`watch silent for ${idleTimeoutMs} ms: connection presumed dead`);
    this.name = 'WatchIdleError';
  }
}

/** One event of a watch stream. */
export interface WatchEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  /** The object (a Status for ERROR); the informer reads it as its kind. */
  readonly object: unknown;
}

export interface RequestOptionsExtra {
  readonly query?: Record<string, string | number | boolean | undefined>;
  readonly body?: unknown;
  readonly contentType?: string;
  /** The Accept header. @default application/json */
  readonly accept?: string;
  readonly timeoutMs?: number;
  /** Aborts the request (not yet sent: never sent; in flight: the connection is dropped). */
  readonly signal?: AbortSignal;
}

/**
 * Node's https Agent names a socket pool by the host and every TLS option:
 * on each request it turns the CA, the client certificate and the key
 * (Buffers of a few KB) into strings and joins them into the name it looks
 * the pool up by (4% of what the controller allocated while converging).
 * Here the name is computed again only when the host or the TLS material
 * changes (an exec plugin's rotated certificate must still open new
 * connections); a client's other TLS options do not change between requests.
 */
export class OneServerAgent extends Agent {
  private last?: { host: unknown; port: unknown; ca: unknown; cert: unknown; key: unknown; name: string };

  override getName(options: RequestOptions = {}): string {
    const { host, port, ca, cert, key } = options;
    const last = this.last;
    if (last && last.host === host && last.port === port && last.ca === ca && last.cert === cert && last.key === key) return last.name;
    const name = super.getName(options);
    this.last = { host, port, ca, cert, key, name };
    return name;
  }
}

/** Thrown for a request refused because its fence (a leadership term) has ended. */
export class FencedError extends Error {
  constructor(method: string, path: string) {
    super(`${method} ${path}: not sent, this process no longer leads`);
    this.name = 'FencedError';
  }
}

/**
 * A small REST client. @kubernetes/client-node has watches and server-side
 * apply too, but importing it loads every generated API model (~85 MB
 * resident, more than the whole cache at 1,000 clusters), and this client
 * sends every apply with fieldValidation=Strict, fences requests by
 * leadership term and bounds idle watches. Requests go over one keep-alive
 * agent because a controller sends many small requests to one server.
 * Credentials come from connection.ts.
 */
export class KubeClient {
  /** A client for a kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster: see credentialSource). */
  static fromKubeconfig(path?: string, options?: ConnectionOptions): KubeClient {
    return new KubeClient(loadConnection(path, options));
  }

  readonly server: string;
  private readonly agent = new OneServerAgent({ keepAlive: true, maxSockets: 32 });

  constructor(readonly connection: Connection) {
    this.server = connection.server;
  }


  private tlsOptions(): Promise<RequestOptions> {
    return this.connection.requestOptions();
  }

  /**
   * The same client, fenced by `signal`: once it aborts, every request (and
   * apply) made through the result is refused before it is sent, and those in
   * flight are cut off. The controller fences each leadership term, so a
   * replica that lost the Lease stops writing at once instead of finishing
   * its reconciles beside the new leader.
   */
  fenced(signal: AbortSignal): KubeClient {
    return Object.create(this, {
      request: {
        value: <T>(method: string, path: string, options: RequestOptionsExtra = {}): Promise<T> =>
          signal.aborted ? Promise.reject(new FencedError(method, path)) : this.request<T>(method, path, { ...options, signal }),
      },
    }) as KubeClient;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- callers name T for what they rely on; an unnamed read of any kind stays as loose as its JSON
  async request<T = any>(method: string, path: string, options: RequestOptionsExtra = {}): Promise<T> {
    if (options.signal?.aborted) throw new FencedError(method, path);
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const tls = await this.tlsOptions();
    const payload = options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    return new Promise<T>((resolve, reject) => {
      const req = request(url, {
        ...tls,
        method,
        agent: this.agent,
        signal: options.signal,
        timeout: options.timeoutMs ?? 30_000,
        headers: {
          Accept: options.accept ?? 'application/json',
          // Writes without a fieldManager are attributed to the user agent in managedFields.
          'User-Agent': USER_AGENT,
          ...(payload !== undefined ? { 'Content-Type': options.contentType ?? 'application/json', 'Content-Length': Buffer.byteLength(payload) } : {}),
          ...(tls.headers ?? {}),
        },
      }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) {
            resolve((text ? parseJson(text) ?? text : undefined) as T);
            return;
          }
          // A rotated token, say: the next request re-reads the credentials (client-go does the same).
          if (status === 401) this.connection.unauthorized?.();
          reject(KubeApiError.fromResponse(status, text));
        });
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
      req.on('error', reject);
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  /**
   * Server-side apply of one object as `fieldManager`. `force` takes over
   * fields another manager owns; `dryRun` validates without persisting.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as for request
  apply<T = any>(
    object: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; [key: string]: unknown } },
    options: { fieldManager: string; force?: boolean; dryRun?: boolean; subresource?: string },
  ): Promise<T> {
    const path = resourcePath(object.apiVersion, object.kind, object.metadata.namespace, object.metadata.name) + (options.subresource ? `/${options.subresource}` : '');
    return this.request<T>('PATCH', path, {
      query: { fieldManager: options.fieldManager, force: options.force ? true : undefined, dryRun: options.dryRun ? 'All' : undefined, fieldValidation: 'Strict' },
      body: object,
      contentType: 'application/apply-patch+yaml',
    });
  }

  /**
   * Streams a watch: one callback per event (ADDED, MODIFIED, DELETED,
   * BOOKMARK, ERROR) until the server ends the stream (resolves) or the
   * connection fails (rejects). `abort()` ends it from this side.
   */
  watch(path: string, query: Record<string, string | number | boolean | undefined>, onEvent: (event: WatchEvent) => void, options: WatchOptions = {}): { done: Promise<void>; abort: () => void } {
    let abort: () => void = () => undefined;
    const done = (async () => {
      const url = new URL(this.server + path);
      for (const [k, v] of Object.entries({ ...query, watch: true })) if (v !== undefined) url.searchParams.set(k, String(v));
      const tls = await this.tlsOptions();
      await new Promise<void>((resolve, reject) => {
        // Ends the stream once: a deliberate abort or a clean end resolves; anything else rejects.
        let failure: Error | undefined;
        let aborted = false;
        let settled = false;
        const settle = (error?: Error): void => {
          if (settled) return;
          settled = true;
          const cause = failure ?? (aborted ? undefined : error);
          if (cause) reject(cause);
          else resolve();
        };
        // Watches get their own connections: a long-lived stream must not hold a pooled socket.
        const req = request(url, { ...tls, method: 'GET', agent: false, headers: { Accept: options.accept ?? 'application/json', ...(tls.headers ?? {}) } }, (res) => {
          options.onActivity?.();
          if ((res.statusCode ?? 0) >= 300) {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c) => (text += c));
            res.on('end', () => {
              if (res.statusCode === 401) this.connection.unauthorized?.(); // as for requests: re-read the credentials
              failure = KubeApiError.fromResponse(res.statusCode ?? 0, text);
              settle();
            });
            return;
          }
          const lines = new JsonLines();
          res.on('data', (bytes: Buffer) => {
            options.onActivity?.();
            options.onBytes?.(bytes.length);
            for (const line of lines.push(bytes)) {
              if (settled) return;
              try {
                onEvent(JSON.parse(line) as WatchEvent);
              } catch (e) {
                failure = e as Error;
                req.destroy();
                return;
              }
            }
          });
          res.on('end', () => settle());
          res.on('aborted', () => settle(new Error('watch stream aborted')));
          res.on('error', (e) => settle(e));
        });
        abort = () => {
          aborted = true;
          req.destroy();
        };
        req.on('close', () => settle(new Error('watch connection closed')));
        req.on('error', (e) => settle(e));
        // A peer that vanished without a FIN or RST (a dead node, a dropped NAT entry, a frozen
        // proxy) leaves the stream open forever: nothing arrives and nothing fails. TCP keepalive
        // finds dead peers at the kernel level; the idle timeout catches the rest.
        req.on('socket', (socket) => socket.setKeepAlive(true, WATCH_KEEPALIVE_MS));
        if (options.idleTimeoutMs) {
          req.setTimeout(options.idleTimeoutMs, () => {
            failure = new WatchIdleError(options.idleTimeoutMs!);
            req.destroy();
          });
        }
        req.end();
      });
    })();
    return { done, abort: () => abort() };
  }

  /** Releases the connection pool, so a process using the client can exit. */
  close(): void {
    this.agent.destroy();
  }
}
