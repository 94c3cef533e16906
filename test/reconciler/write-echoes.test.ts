/**
 * The echoes of the controller's own writes (write-echoes.ts): the watch
 * event that carries exactly the version a write returned queues nothing,
 * whether it arrives after the write's response or before it; every other
 * event queues its cluster, and a failed write holds nothing back.
 */
import { WriteEchoes } from '../../reconciler/memory/write-echoes.js';

const object = (resourceVersion: string, name = 'kv-1') => ({ metadata: { namespace: 'ns', name, resourceVersion } });

/** A write whose response the test releases: `respond(version)` or `fail()`. */
function pendingWrite(echoes: WriteEchoes, name = 'kv-1') {
  let respond!: (version: string) => void;
  let fail!: () => void;
  const done = echoes.track('StatefulSet', object('', name), () => new Promise<ReturnType<typeof object>>((resolve, reject) => {
    respond = (version) => resolve(object(version, name));
    fail = () => reject(new Error('409 Conflict'));
  }));
  return { respond: async (version: string) => { respond(version); await done; }, fail: async () => { fail(); await done.catch(() => undefined); } };
}

function queued() {
  const calls: string[] = [];
  return { calls, queue: (label: string) => () => calls.push(label) };
}

describe('echoes of the controller\'s own writes', () => {
  it('queues nothing for the echo that arrives after the response, and queues the change after it', async () => {
    const echoes = new WriteEchoes();
    await pendingWrite(echoes).respond('10');
    const q = queued();
    echoes.observe('updated', 'StatefulSet', object('10'), q.queue('echo'));
    echoes.observe('updated', 'StatefulSet', object('11'), q.queue('someone else'));
    expect(q.calls).toEqual(['someone else']);
    expect(echoes.size).toBe(0);
  });

  it('holds an event that arrives while the write is in flight, and drops it once the response shows it was the echo', async () => {
    const echoes = new WriteEchoes();
    const write = pendingWrite(echoes);
    const q = queued();
    echoes.observe('updated', 'StatefulSet', object('10'), q.queue('echo'));
    expect(q.calls).toEqual([]);
    await write.respond('10');
    expect(q.calls).toEqual([]);
    expect(echoes.size).toBe(0);
  });

  it('queues a held event of another version once the response comes, and still drops the echo after it', async () => {
    const echoes = new WriteEchoes();
    const write = pendingWrite(echoes);
    const q = queued();
    echoes.observe('updated', 'StatefulSet', object('9'), q.queue('before our write'));
    await write.respond('10');
    expect(q.calls).toEqual(['before our write']);
    echoes.observe('updated', 'StatefulSet', object('10'), q.queue('echo'));
    expect(q.calls).toEqual(['before our write']);
  });

  it('queues what it held when the write fails: a failed write has no echo', async () => {
    const echoes = new WriteEchoes();
    const write = pendingWrite(echoes);
    const q = queued();
    echoes.observe('updated', 'StatefulSet', object('12'), q.queue('changed meanwhile'));
    await write.fail();
    expect(q.calls).toEqual(['changed meanwhile']);
    expect(echoes.size).toBe(0);
    echoes.observe('updated', 'StatefulSet', object('13'), q.queue('later'));
    expect(q.calls).toEqual(['changed meanwhile', 'later']);
  });

  it('queues a deletion at once, even of an object whose write is in flight', async () => {
    const echoes = new WriteEchoes();
    const write = pendingWrite(echoes);
    const q = queued();
    echoes.observe('deleted', 'StatefulSet', object('10'), q.queue('deleted'));
    expect(q.calls).toEqual(['deleted']);
    await write.respond('10');
  });

  it('keeps objects apart by kind and name', async () => {
    const echoes = new WriteEchoes();
    await pendingWrite(echoes, 'kv-1').respond('10');
    const q = queued();
    echoes.observe('updated', 'Service', object('10', 'kv-1'), q.queue('a Service of that name'));
    echoes.observe('updated', 'StatefulSet', object('10', 'kv-2'), q.queue('another StatefulSet'));
    expect(q.calls).toEqual(['a Service of that name', 'another StatefulSet']);
    expect(echoes.size).toBe(1);
  });

  it('forgets a write whose echo never comes at the object\'s next event (a relist skipped the echo)', async () => {
    const echoes = new WriteEchoes();
    await pendingWrite(echoes).respond('10');
    const q = queued();
    echoes.observe('updated', 'StatefulSet', object('15'), q.queue('after a relist'));
    expect(q.calls).toEqual(['after a relist']);
    expect(echoes.size).toBe(0);
  });

  it('lets a later write of the same object take over: events held for the earlier one are queued', async () => {
    const echoes = new WriteEchoes();
    const first = pendingWrite(echoes);
    const q = queued();
    echoes.observe('updated', 'StatefulSet', object('10'), q.queue('held for the first write'));
    const second = pendingWrite(echoes);
    await first.respond('10');
    expect(q.calls).toEqual(['held for the first write']);
    await second.respond('11');
    echoes.observe('updated', 'StatefulSet', object('11'), q.queue('echo of the second'));
    expect(q.calls).toEqual(['held for the first write']);
  });
});
