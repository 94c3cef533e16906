/**
 * The informer's timing on a fake clock against an in-memory list/watch
 * endpoint: list retries back off from the initial delay, doubling to the
 * cap; a watch that hears nothing past its bound makes the informer report
 * itself not live (what /healthz serves) until something arrives; a watch
 * that says Gone makes it relist and report what was deleted meanwhile,
 * keeping the objects that did not change.
 * test/integration covers the same informer against the real API server.
 */
import { Informer, type CachedObject, type InformerEventType } from '../../kube/informer.js';
import { FakeClock, settle } from '../support/fake-clock.js';
import { FakeListWatch } from '../support/fake-list-watch.js';

function informer(options: { listFailures?: number; idleMs?: number } = {}) {
  const clock = new FakeClock();
  const api = new FakeListWatch(() => clock.monotonic());
  api.listFailures = options.listFailures ?? 0;
  const events: Array<[InformerEventType, string]> = [];
  const i = new Informer({
    client: api, clock, apiVersion: 'v1', kind: 'ConfigMap', path: '/api/v1/configmaps',
    initialBackoffMs: 1000, maxBackoffMs: 8000, watchIdleTimeoutMs: options.idleMs,
    onEvent: (type, object: CachedObject) => events.push([type, object.metadata.name]),
  });
  return { clock, api, events, informer: i };
}

describe('the informer on a fake clock', () => {
  it('retries a failing list after 1, 2, 4, 8, 8 s (jitter from the clock), then syncs', async () => {
    const { clock, api, informer: i } = informer({ listFailures: 5 });
    api.put('a');
    i.start();
    await clock.advance(60_000);
    expect(api.listedAt).toEqual([0, 1000, 3000, 7000, 15_000, 23_000]);
    await i.hasSynced();
    expect(i.size).toBe(1);
    await i.stop();
  });

  it('reports itself not live once nothing has arrived past its bound, and live again when a bookmark does', async () => {
    const { clock, api, informer: i } = informer({ idleMs: 10_000 });
    i.start();
    await clock.advance(0);
    // Bound: the idle timeout plus the longest reconnect backoff (8 s).
    await clock.advance(18_000);
    expect(i.liveness()).toMatchObject({ live: true, boundMs: 18_000 });
    await clock.advance(1);
    expect(i.liveness()).toMatchObject({ live: false, silentMs: 18_001 });
    api.send('BOOKMARK', { metadata: { resourceVersion: '7' } });
    expect(i.liveness().live).toBe(true);
    await i.stop();
    expect(i.liveness().live).toBe(true); // a stopped informer is not a reason to restart the process
  });

  it('is watching only while a watch is open: not before its first list, not between a failed watch and the next', async () => {
    const { clock, api, informer: i } = informer();
    expect(i.isWatching).toBe(false);
    i.start();
    await clock.advance(0);
    expect(i.isSynced).toBe(true);
    expect(i.isWatching).toBe(true);
    api.current.end(new Error('connection reset'));
    await settle();
    expect(i.isWatching).toBe(false);
    expect(api.watches).toHaveLength(1);
    await clock.advance(1200); // the first backoff, 1 s with up to 20% jitter
    expect(api.watches).toHaveLength(2);
    expect(i.isWatching).toBe(true);
    await i.stop();
    expect(i.isWatching).toBe(false);
  });

  it('relists when the watch says Gone, and reports what was deleted while it was not watching', async () => {
    const { clock, api, events, informer: i } = informer();
    api.put('a');
    api.put('b');
    api.put('d');
    i.start();
    await clock.advance(0);
    const unchanged = i.get('ns/b');
    const before = i.get('ns/d');
    api.objects.delete('a');
    api.put('c');
    api.put('d', { changed: 'yes' });
    api.send('ERROR', { code: 410, reason: 'Expired', message: 'too old resource version' });
    await settle();
    await clock.advance(0);
    expect(events).toEqual([['added', 'a'], ['added', 'b'], ['added', 'd'], ['updated', 'd'], ['added', 'c'], ['deleted', 'a']]);
    expect(i.list().map((o) => o.metadata.name).sort()).toEqual(['b', 'c', 'd']);
    // The list sends fresh copies; an object unchanged since it was cached is kept, not held twice.
    expect(unchanged).toBeDefined();
    expect(before).toBeDefined();
    expect(i.get('ns/b')).toBe(unchanged);
    expect(i.get('ns/d')).not.toBe(before);
    expect(i.get('ns/d')!.data).toEqual({ changed: 'yes' });
    await i.stop();
  });
});
