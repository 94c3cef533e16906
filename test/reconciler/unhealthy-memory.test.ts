/**
 * Which members this process saw unhealthy at its last look: the trust a
 * replacement clock carried in status needs.
 */
import { UnhealthyMemory } from '../../reconciler/day2/unhealthy-memory.js';

describe('the memory of the last look\'s unhealthy members', () => {
  it('knows nothing before its first look, and only the last look after', () => {
    const memory = new UnhealthyMemory();
    expect([...memory.previous('a')]).toEqual([]);
    memory.remember('a', ['kv-1', 'kv-2']);
    memory.remember('b', ['kv-0']);
    expect([...memory.previous('a')].sort()).toEqual(['kv-1', 'kv-2']);
    memory.remember('a', ['kv-2']);
    expect([...memory.previous('a')]).toEqual(['kv-2']);
    expect([...memory.previous('b')]).toEqual(['kv-0']);
  });

  it('holds an entry only for a cluster with members unhealthy at its last look', () => {
    const memory = new UnhealthyMemory();
    memory.remember('a', ['kv-1']);
    memory.remember('b', []);
    expect(memory.size).toBe(1);
    memory.remember('a', []);
    expect(memory.size).toBe(0);
    expect([...memory.previous('a')]).toEqual([]);
  });
});
