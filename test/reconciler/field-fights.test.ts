/**
 * The brake on drift correction (field-fights.ts), on a clock the test
 * controls: a field corrected 3 times within the window is held, each new
 * fight holds it twice as long (up to the cap), and records age out.
 */
import { FieldFights } from '../../reconciler/core/field-fights.js';

const MINUTE = 60_000;
const policy = { threshold: 3, windowMs: 10 * MINUTE, holdMs: 5 * MINUTE, maxHoldMs: 12 * MINUTE };

describe('the drift-correction brake', () => {
  it('holds a field corrected 3 times within the window, from the third correction on', () => {
    const fights = new FieldFights(policy);
    expect(fights.corrected('spec.replicas', 0)).toBeUndefined();
    expect(fights.corrected('spec.replicas', 1 * MINUTE)).toBeUndefined();
    expect(fights.heldUntil('spec.replicas', 1 * MINUTE)).toBeUndefined();
    expect(fights.corrected('spec.replicas', 2 * MINUTE)).toBe(7 * MINUTE);
    expect(fights.heldUntil('spec.replicas', 6 * MINUTE)).toBe(7 * MINUTE);
    expect(fights.heldUntil('spec.replicas', 7 * MINUTE)).toBeUndefined();
    // Other fields are not held.
    expect(fights.heldUntil('spec.template.spec.containers[kv].image', 3 * MINUTE)).toBeUndefined();
  });

  it('does not count corrections spread wider than the window as a fight (a human fixing a mistake now and then)', () => {
    const fights = new FieldFights(policy);
    for (let t = 0; t < 100 * MINUTE; t += 6 * MINUTE) expect(fights.corrected('spec.replicas', t)).toBeUndefined();
  });

  it('doubles the hold with each fight on the same field, up to the cap', () => {
    const fights = new FieldFights(policy);
    const fight = (start: number) => {
      fights.corrected('spec.replicas', start);
      fights.corrected('spec.replicas', start + 1);
      return fights.corrected('spec.replicas', start + 2)! - (start + 2);
    };
    expect(fight(0)).toBe(5 * MINUTE);
    expect(fight(20 * MINUTE)).toBe(10 * MINUTE);
    expect(fight(40 * MINUTE)).toBe(12 * MINUTE);
  });

  it('forgets a field once it has had no correction within the window and no hold for the longest hold', () => {
    const fights = new FieldFights(policy);
    fights.corrected('spec.replicas', 0);
    fights.corrected('spec.replicas', 1);
    fights.corrected('spec.replicas', 2);
    fights.prune(10 * MINUTE);
    expect(fights.size).toBe(1);
    fights.prune(5 * MINUTE + 2 + 12 * MINUTE + 1);
    expect(fights.size).toBe(0);
  });
});
