/**
 * Event names. The client here only captures what would be POSTed: whether
 * two names collide is decided before any request, and a collision on the
 * real API server would only show as a lost Event (recording never fails a
 * reconcile), which is what this guards against.
 */
import type { KubeClient } from '../../kube/client.js';
import { silentLogger } from '../../kube/log.js';
import { EventRecorder } from '../../reconciler/process/events.js';

const NOW_MS = Date.parse('2026-11-26T12:00:00.000Z');
const KV = { apiVersion: 'example.com/v1alpha1', kind: 'DistributedKV', metadata: { name: 'orders', namespace: 'shop', uid: 'u-1' } };
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

function capturingRecorder(posted: { path: string; name: string }[]): EventRecorder {
  const client = {
    request: async (_method: string, path: string, options: { body: { metadata: { name: string } } }) => {
      posted.push({ path, name: options.body.metadata.name });
      return {};
    },
  } as unknown as KubeClient;
  return new EventRecorder(client, 'dkv-controller', silentLogger, { now: () => NOW_MS });
}

describe('Event names', () => {
  it('differ for Events on one object in the same millisecond, from one recorder and from two', async () => {
    const posted: { path: string; name: string }[] = [];
    const first = capturingRecorder(posted);
    const second = capturingRecorder(posted);
    for (let i = 0; i < 50; i++) await first.record(KV, 'Normal', 'Created', 'created');
    for (let i = 0; i < 50; i++) await second.record(KV, 'Normal', 'Created', 'created');
    const names = posted.map((p) => p.name);
    expect(new Set(names).size).toBe(100);
    for (const name of names) {
      expect(name.startsWith(`orders.${NOW_MS.toString(16)}`)).toBe(true);
      expect(name).toMatch(DNS_SUBDOMAIN);
      expect(name.length).toBeLessThanOrEqual(253);
    }
    expect(posted[0].path).toBe('/api/v1/namespaces/shop/events');
  });
});
