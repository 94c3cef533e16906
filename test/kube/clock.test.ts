/**
 * The real clock's timers (kube/clock.ts): a delay longer than setTimeout
 * keeps (about 24.8 days; a backup's stale time a year away, say) waits, in
 * steps, instead of firing after 1 ms as Node's setTimeout does with it.
 */
import { LONGEST_TIMER_MS, realClock } from '../../kube/clock.js';

describe('the real clock', () => {
  it('does not fire a timer set beyond setTimeout\'s longest delay early, and warns of nothing', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    let fired = false;
    const handle = realClock.after(400 * 86_400_000, () => { fired = true; }).unref();
    try {
      await new Promise((r) => setTimeout(r, 100));
      expect(fired).toBe(false);
      expect(warnings).not.toContain('TimeoutOverflowWarning');
    } finally {
      handle.cancel();
      process.off('warning', onWarning);
    }
  });

  it('fires a short timer once, and not at all once cancelled', async () => {
    let fired = 0;
    realClock.after(10, () => fired++);
    const cancelled = realClock.after(10, () => fired++);
    cancelled.cancel();
    await new Promise((r) => setTimeout(r, 60));
    expect(fired).toBe(1);
    expect(LONGEST_TIMER_MS).toBe(2_147_483_647);
  });
});
