/**
 * An in-memory stand-in for the one resource leader election uses, with the
 * API server's optimistic concurrency: a write carrying a stale
 * resourceVersion gets 409, a create of an existing Lease gets 409, a read
 * of a missing one 404. `unreachable` makes every request fail as a dead
 * network would. For unit tests on a fake clock; leader.test.ts in
 * test/integration runs the same elector against the real API server.
 */
import { KubeApiError, type RequestOptionsExtra } from '../../kube/client.js';
import type { LeaseApi } from '../../kube/leader.js';

export class FakeLeaseApi implements LeaseApi {
  lease?: any;
  unreachable = false;
  private version = 0;
  readonly writes: string[] = [];

  async request<T = any>(method: string, _path: string, options: RequestOptionsExtra = {}): Promise<T> {
    if (this.unreachable) throw new Error('connect ETIMEDOUT');
    const body = options.body as any;
    switch (method) {
      case 'GET':
        if (!this.lease) throw new KubeApiError(404, 'NotFound', 'leases not found', undefined);
        return structuredClone(this.lease);
      case 'POST':
        if (this.lease) throw new KubeApiError(409, 'AlreadyExists', 'lease exists', undefined);
        return this.store(body, 'create');
      case 'PUT':
        if (!this.lease || body.metadata.resourceVersion !== this.lease.metadata.resourceVersion) throw new KubeApiError(409, 'Conflict', 'the object has been modified', undefined);
        return this.store(body, 'update');
      default:
        throw new Error(`unexpected ${method}`);
    }
  }

  /** Another candidate writes the Lease, as the API server would accept it. */
  takenBy(holder: string, leaseDurationSeconds = 15): void {
    this.store({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'dkv-controller', namespace: 'dkv-system' }, spec: { ...this.lease?.spec, holderIdentity: holder, leaseDurationSeconds, renewTime: `renewed-by-${holder}-${this.version}` } }, 'other');
  }

  get holder(): string | undefined {
    return this.lease?.spec?.holderIdentity;
  }

  private store(body: any, what: string): any {
    this.lease = structuredClone({ ...body, metadata: { ...body.metadata, resourceVersion: String(++this.version) } });
    this.writes.push(`${what} ${this.lease.spec?.holderIdentity}`);
    return structuredClone(this.lease);
  }
}
