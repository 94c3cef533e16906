/** The real-node demo's CPU share (scripts/demo-node-resources.ts): what fits a node is what the scheduler and the kubelet admit. */
import { memberCpuRequest, parseCpu } from '../../scripts/demo-node-resources.js';

describe('the real-node demo\'s member CPU request', () => {
  test('CPU quantities read as millicores', () => {
    expect([parseCpu('2'), parseCpu('1.5'), parseCpu('500m'), parseCpu(4), parseCpu('0')]).toEqual([2000, 1500, 500, 4000, 0]);
    expect(() => parseCpu('2Gi')).toThrow(/not a CPU quantity/);
  });

  test('eleven members beside two controllers fit a 2-CPU node, with a tenth of it left over', () => {
    const perMember = memberCpuRequest({ allocatableMillis: 2000, reservedMillis: 200, members: 11 });
    expect(perMember).toBe(140);
    expect(perMember * 11 + 200).toBeLessThanOrEqual(2000 * 0.9);
  });

  test('never below 10m, even on a node with nothing left', () => {
    expect(memberCpuRequest({ allocatableMillis: 1000, reservedMillis: 1000, members: 9 })).toBe(10);
  });
});
