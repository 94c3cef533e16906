/**
 * An in-memory stand-in for the Leases of one namespace, with the API
 * server's optimistic concurrency (a stale resourceVersion gets 409, a
 * second create 409, a missing Lease 404) and list by label selector
 * (`key=value`). `unreachable` holds the identities whose requests fail as
 * a dead network would. For sharding's unit tests on a fake clock.
 */
import { KubeApiError, type RequestOptionsExtra } from '../../kube/client.js';

export class FakeLeaseStore {
  readonly leases = new Map<string, any>();
  private version = 0;
  /** Clients (by the name given to client()) whose requests fail. */
  readonly unreachable = new Set<string>();

  /** A client for one replica: `who` names it for `unreachable`. */
  client(who: string): { request<T = any>(method: string, path: string, options?: RequestOptionsExtra): Promise<T> } {
    return { request: async (method, path, options = {}) => this.request(who, method, path, options) };
  }

  private async request(who: string, method: string, path: string, options: RequestOptionsExtra): Promise<any> {
    if (this.unreachable.has(who)) throw new Error('connect ETIMEDOUT');
    const body = options.body as any;
    const name = /\/leases\/([^/?]+)$/.exec(path)?.[1];
    switch (method) {
      case 'GET': {
        if (name) {
          const lease = this.leases.get(name);
          if (!lease) throw new KubeApiError(404, 'NotFound', `leases "${name}" not found`, undefined);
          return structuredClone(lease);
        }
        const [key, value] = String(options.query?.labelSelector ?? '').split('=');
        return { items: [...this.leases.values()].filter((l) => !key || l.metadata.labels?.[key] === value).map((l) => structuredClone(l)) };
      }
      case 'POST':
        if (this.leases.has(body.metadata.name)) throw new KubeApiError(409, 'AlreadyExists', 'lease exists', undefined);
        return this.store(body);
      case 'PUT': {
        const current = this.leases.get(name!);
        if (!current || body.metadata.resourceVersion !== current.metadata.resourceVersion) throw new KubeApiError(409, 'Conflict', 'the object has been modified', undefined);
        return this.store(body);
      }
      default:
        throw new Error(`unexpected ${method}`);
    }
  }

  private store(body: any): any {
    const lease = structuredClone({ ...body, metadata: { ...body.metadata, resourceVersion: String(++this.version) } });
    this.leases.set(lease.metadata.name, lease);
    return structuredClone(lease);
  }
}
