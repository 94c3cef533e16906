/**
 * The linearizability check itself (test/support/linearizability.ts, porcupine
 * built from the Go module proxy): it must flag the histories it exists to
 * catch, or a passing Day-2 run would prove nothing.
 */
import { checkLinearizable, type HistoryOperation } from '../support/linearizability.js';

const op = (o: Partial<HistoryOperation> & Pick<HistoryOperation, 'kind' | 'call' | 'return'>): HistoryOperation => ({ client: 0, key: 'k', known: true, ...o });

describe('the linearizability check (porcupine)', () => {
  it('flags a read that misses an acknowledged write, and a write lost by the end', async () => {
    const stale = [op({ kind: 'put', value: 'a', call: 0, return: 10 }), op({ client: 1, kind: 'get', call: 20, return: 30 })];
    expect((await checkLinearizable(stale)).result).toBe('Illegal');
    const lost = [op({ kind: 'put', value: 'a', call: 0, return: 10 }), op({ client: 1, kind: 'put', value: 'b', call: 5, return: 15 }), op({ client: 2, kind: 'get', found: 'c', call: 40, return: 50 })];
    const checked = await checkLinearizable(lost);
    expect(checked.result).toBe('Illegal');
    expect(checked.visualization).toMatch(/violation\.html$/);
  }, 60_000);

  it('flags a compare-and-swap that answered against the value it compared', async () => {
    const history = [op({ kind: 'put', value: 'a', call: 0, return: 10 }), op({ client: 1, kind: 'cas', expect: 'a', value: 'b', swapped: false, call: 20, return: 30 })];
    expect((await checkLinearizable(history)).result).toBe('Illegal');
  }, 60_000);

  it('is not stalled by many writes of unknown outcome that nothing observed, nor do they hide a violation', async () => {
    // A member going away mid-run: dozens of writes to one key time out, none of their values is ever read.
    const unknown = Array.from({ length: 80 }, (_, i) => op({ client: 1 + (i % 7), kind: 'put', value: `lost-${i}`, known: false, call: 100 + i, return: 100_000 }));
    const history = [op({ kind: 'put', value: 'a', call: 0, return: 10 }), ...unknown, op({ client: 8, kind: 'get', found: 'a', call: 500, return: 510 })];
    expect((await checkLinearizable(history)).result).toBe('Ok');
    const stale = [op({ kind: 'put', value: 'a', call: 0, return: 10 }), op({ kind: 'put', value: 'b', call: 20, return: 30 }), ...unknown, op({ client: 8, kind: 'get', found: 'a', call: 500, return: 510 })];
    // Not linearizable without them; with them the search is too large to finish in 5 s: never Ok either way.
    expect((await checkLinearizable(stale, 0, 5)).result).not.toBe('Ok');
  }, 60_000);

  it('accepts concurrent writes in either order, and a write of unknown outcome taken or not', async () => {
    const concurrent = [op({ kind: 'put', value: 'a', call: 0, return: 20 }), op({ client: 1, kind: 'put', value: 'b', call: 5, return: 15 }), op({ client: 2, kind: 'get', found: 'a', call: 30, return: 40 })];
    expect((await checkLinearizable(concurrent)).result).toBe('Ok');
    for (const found of ['x', undefined]) {
      const unknown = [op({ kind: 'put', value: 'x', known: false, call: 0, return: 1_000 }), op({ client: 1, kind: 'get', found, call: 50, return: 60 })];
      expect((await checkLinearizable(unknown)).result).toBe('Ok');
    }
    const swapped = [op({ kind: 'put', value: 'a', call: 0, return: 10 }), op({ client: 1, kind: 'cas', expect: 'a', value: 'b', swapped: true, call: 20, return: 30 }), op({ client: 2, kind: 'get', found: 'b', call: 40, return: 50 })];
    expect((await checkLinearizable(swapped)).result).toBe('Ok');
  }, 60_000);
});
