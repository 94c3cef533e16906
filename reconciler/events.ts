import { randomBytes } from 'node:crypto';
import { resourcePath, type KubeClient } from '../kube/client.js';
import type { Clock } from '../kube/clock.js';
import type { Logger } from '../kube/log.js';

export interface InvolvedObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly uid?: string; readonly resourceVersion?: string };
}

/**
 * Records Kubernetes Events on a DistributedKV, so `kubectl describe`
 * answers "what did the controller do, and why". Recording never fails a
 * reconcile: an Event is a report, not part of the desired state.
 */
export class EventRecorder {
  constructor(
    private readonly client: KubeClient,
    private readonly component: string,
    private readonly log: Logger,
    private readonly clock: Pick<Clock, 'now'>,
  ) {}

  async record(object: InvolvedObject, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const nowMs = this.clock.now();
    const now = new Date(nowMs).toISOString();
    const namespace = object.metadata.namespace ?? 'default';
    try {
      await this.client.request('POST', resourcePath('v1', 'Event', namespace), {
        body: {
          apiVersion: 'v1',
          kind: 'Event',
          metadata: { name: `${object.metadata.name}.${nowMs.toString(16)}${randomBytes(3).toString('hex')}`, namespace },
          involvedObject: { apiVersion: object.apiVersion, kind: object.kind, name: object.metadata.name, namespace, uid: object.metadata.uid, resourceVersion: object.metadata.resourceVersion },
          type,
          reason,
          message: message.length > 1024 ? message.slice(0, 1021) + '...' : message,
          source: { component: this.component },
          reportingComponent: this.component,
          reportingInstance: this.component,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      });
    } catch (e) {
      this.log.warn('recording an event failed', { reason, object: `${object.kind}/${object.metadata.name}`, error: String(e) });
    }
  }
}
