/** The work queue's guarantees, which the reconcile contract relies on. */
import { WorkQueue } from '../../kube/queue.js';
import { FakeClock } from '../support/fake-clock.js';

describe('the work queue', () => {
  it('collapses duplicate keys waiting in the queue', async () => {
    const queue = new WorkQueue();
    for (const key of ['ns/a', 'ns/b', 'ns/a', 'ns/a']) queue.add(key);
    expect(queue.depth).toBe(2);
    expect(await queue.get()).toBe('ns/a');
    expect(await queue.get()).toBe('ns/b');
    queue.shutDown();
  });

  it('never hands a key to a second worker while one processes it, and processes it again afterwards if it changed meanwhile', async () => {
    const queue = new WorkQueue();
    queue.add('ns/a');
    const key = await queue.get();
    queue.add('ns/a'); // an event arrives mid-reconcile
    expect(queue.depth).toBe(0);
    let second: string | undefined;
    const waiting = queue.get().then((k) => (second = k));
    await Promise.resolve();
    expect(second).toBeUndefined();
    queue.done(key!);
    await waiting;
    expect(second).toBe('ns/a');
    queue.done('ns/a');
    queue.shutDown();
  });

  it('backs off failures per key from seconds, doubling to a cap, with jitter; a success resets it', () => {
    const queue = new WorkQueue({ baseMs: 2000, maxMs: 300_000 });
    const delays = Array.from({ length: 12 }, () => queue.addRateLimited('ns/a'));
    delays.forEach((delay, n) => {
      const nominal = Math.min(300_000, 2000 * 2 ** n);
      expect(delay).toBeGreaterThanOrEqual(nominal * 0.8);
      expect(delay).toBeLessThanOrEqual(nominal * 1.2);
    });
    expect(queue.addRateLimited('ns/b')).toBeLessThanOrEqual(2400); // per key
    queue.forget('ns/a');
    expect(queue.addRateLimited('ns/a')).toBeLessThanOrEqual(2400);
    queue.shutDown();
  });

  it('lets an event bring a key back before its retry is due', async () => {
    const queue = new WorkQueue({ baseMs: 60_000, maxMs: 60_000 });
    queue.addRateLimited('ns/a');
    expect(queue.depth).toBe(0);
    queue.add('ns/a');
    expect(await queue.get()).toBe('ns/a');
    queue.shutDown();
  });

  it('hands waiting workers nothing after shutdown, so they exit', async () => {
    const queue = new WorkQueue();
    const waiting = queue.get();
    queue.shutDown();
    expect(await waiting).toBeUndefined();
  });

  it('brings a failed key back exactly when its backoff is due, on the injected clock', async () => {
    const clock = new FakeClock();
    const queue = new WorkQueue({ baseMs: 2000, maxMs: 300_000 }, undefined, clock);
    clock.randomValue = 0.5; // jitter factor 1.0
    expect(queue.addRateLimited('ns/a')).toBe(2000);
    expect(queue.addRateLimited('ns/a')).toBe(4000); // the second failure replaces the first retry
    await clock.advance(3999);
    expect(queue.depth).toBe(0);
    await clock.advance(1);
    expect(queue.depth).toBe(1);
    clock.randomValue = 0; // the low end of the jitter: 0.8 x nominal
    expect(queue.addRateLimited('ns/b')).toBe(1600);
    queue.shutDown();
    expect(clock.pendingTimers).toBe(0);
  });

  it('fires a requeue-after once, and not at all after shutdown', async () => {
    const clock = new FakeClock();
    const queue = new WorkQueue(undefined, undefined, clock);
    queue.addAfter('ns/a', 60_000);
    await clock.advance(60_000);
    expect(await queue.get()).toBe('ns/a');
    queue.done('ns/a');
    queue.addAfter('ns/b', 1000);
    queue.shutDown();
    await clock.advance(5000);
    expect(queue.depth).toBe(0);
  });
});
