/**
 * Calls to the store's members are fenced by the controller's leadership
 * term, as its Kubernetes writes are: once the term ends, nothing more is
 * sent and a call in flight is cut off. A loopback HTTP server stands in for
 * a member that answers slowly; it counts what reaches it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EtcdMembership } from '../../engines/etcd/membership.js';

describe('membership calls after the leadership term ended', () => {
  let server: Server;
  let url: string;
  let received = 0;
  beforeAll(async () => {
    server = createServer((req, res) => {
      received++;
      // Never answers within the test: the call can only end by the fence or its timeout.
      req.resume();
      setTimeout(() => res.end('{}'), 5_000).unref();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  it('sends nothing once the term has ended', async () => {
    const term = new AbortController();
    term.abort();
    const before = received;
    await expect(new EtcdMembership(() => ['kv-0'], () => url, 3000, term.signal).remove('1')).rejects.toThrow(/no member answered.*fenced/);
    expect(received).toBe(before);
  });

  it('cuts off a call in flight when the term ends', async () => {
    const term = new AbortController();
    // Timeouts far beyond the test's own: only the fence can end the call before jest gives up on the test.
    const call = new EtcdMembership(() => ['kv-0'], () => url, 10 * 60_000, term.signal).addLearner('http://kv-3.kv-peers:2380');
    const expectation = expect(call).rejects.toThrow(/no member answered/);
    await new Promise((r) => setTimeout(r, 100));
    term.abort();
    // Both list attempts (linearizable, then serializable) ended by the fence.
    await expectation;
  });
});
