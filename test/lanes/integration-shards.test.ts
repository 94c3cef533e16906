import { planIntegration } from './integration-shards.js';

describe('the integration lane in two shards, and the real node\'s files alone', () => {
  it('balances the shards by weight, heaviest first, and keeps the files that must run alone out of both', () => {
    const weights: Record<string, number> = { a: 9, b: 8, c: 5, d: 4, e: 1, 'node/x': 7, 'node/y': 2 };
    const plan = planIntegration(Object.keys(weights), (f) => weights[f], (f) => f.startsWith('node/'));
    expect(plan.alone).toEqual(['node/x', 'node/y']);
    expect([...plan.shards[0], ...plan.shards[1]].sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
    const total = (shard: readonly string[]) => shard.reduce((sum, f) => sum + weights[f], 0);
    expect(Math.abs(total(plan.shards[0]) - total(plan.shards[1]))).toBeLessThanOrEqual(9);
    expect(plan.shards.map(total).sort()).toEqual([13, 14]);
  });

  it('leaves a shard empty rather than splitting one file', () => {
    expect(planIntegration(['only'], () => 1, () => false).shards).toEqual([['only'], []]);
  });
});
