/**
 * The clock a quorum-loss recovery waits on: how long and on how many looks
 * in a row this controller saw the quorum lost.
 */
import { QuorumLossClock } from '../../reconciler/day2/quorum-loss-clock.js';

describe('the quorum-loss clock', () => {
  it('counts the looks and the time since the first look of an unbroken loss', () => {
    const clock = new QuorumLossClock();
    expect(clock.look('a', true, 1_000, 60_000)).toEqual({ forMs: 0, looks: 1, requiredMs: 60_000 });
    expect(clock.look('a', true, 31_000, 60_000)).toEqual({ forMs: 30_000, looks: 2, requiredMs: 60_000 });
    expect(clock.look('a', true, 61_000, 60_000)).toEqual({ forMs: 60_000, looks: 3, requiredMs: 60_000 });
  });

  it('starts over after one look that did not see the loss, and keeps clusters apart', () => {
    const clock = new QuorumLossClock();
    clock.look('a', true, 0, 60_000);
    clock.look('b', true, 0, 60_000);
    expect(clock.look('a', false, 30_000, 60_000)).toEqual({ forMs: 0, looks: 0, requiredMs: 60_000 });
    expect(clock.look('a', true, 40_000, 60_000)).toEqual({ forMs: 0, looks: 1, requiredMs: 60_000 });
    expect(clock.look('b', true, 40_000, 60_000)).toEqual({ forMs: 40_000, looks: 2, requiredMs: 60_000 });
  });

  it('knows nothing of what another process saw: a restarted controller starts the clock again', () => {
    new QuorumLossClock().look('a', true, 0, 60_000);
    expect(new QuorumLossClock().look('a', true, 3_600_000, 60_000).looks).toBe(1);
  });

  it('runs only for clusters without quorum at their last look', () => {
    const clock = new QuorumLossClock();
    clock.look('a', true, 0, 60_000);
    clock.look('b', false, 0, 60_000);
    expect(clock.size).toBe(1);
    clock.look('a', false, 1_000, 60_000);
    expect(clock.size).toBe(0);
  });
});
