/**
 * The conversion service's retries: ordinary failures back off from seconds,
 * a missing namespace is said once and looked at again slowly, and the time
 * spent waiting for a namespace does not count as failures: once it exists,
 * the next ordinary failure is retried after seconds again.
 */
import type { LogFields, Logger } from '../../kube/log.js';
import { MissingNamespaceError } from '../../conversion/certificate-rotation.js';
import { withBackoff, type Retry } from '../../conversion/retry-with-backoff.js';
import { FakeClock } from '../support/fake-clock.js';

const RETRY: Retry = { baseMs: 1_000, maxMs: 60_000, missingNamespaceMs: 300_000 };

function recordingLogger(): { log: Logger; lines: { level: string; message: string }[] } {
  const lines: { level: string; message: string }[] = [];
  const at = (level: string) => (message: string, _fields?: LogFields) => void lines.push({ level, message });
  const log: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => log };
  return { log, lines };
}

/** Runs withBackoff over a script of outcomes (an Error to throw, or a value) and returns when each attempt ran. */
async function attemptTimes(outcomes: (Error | string)[]): Promise<{ times: number[]; result: string | undefined; lines: { level: string; message: string }[] }> {
  const clock = new FakeClock();
  const { log, lines } = recordingLogger();
  const times: number[] = [];
  let next = 0;
  const running = withBackoff(clock, RETRY, () => false, log, 'certificate', async () => {
    times.push(clock.monotonic());
    const outcome = outcomes[next++];
    if (outcome instanceof Error) throw outcome;
    return outcome;
  });
  while (next < outcomes.length) await clock.advance(1_000);
  return { times, result: await running, lines };
}

describe('withBackoff', () => {
  it('doubles the wait after each ordinary failure, from baseMs up to maxMs', async () => {
    const failures = Array.from({ length: 8 }, () => new Error('refused'));
    const { times, result } = await attemptTimes([...failures, 'ok']);
    expect(result).toBe('ok');
    const waits = times.slice(1).map((t, i) => t - times[i]);
    expect(waits).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]);
  });

  it('says a missing namespace once and waits missingNamespaceMs; once it exists, the next failure waits baseMs again', async () => {
    const missing = () => new MissingNamespaceError('dkv-system', 'dkv-controller-webhook-certificate');
    const { times, result, lines } = await attemptTimes([missing(), missing(), missing(), new Error('refused'), new Error('refused'), 'ok']);
    expect(result).toBe('ok');
    const waits = times.slice(1).map((t, i) => t - times[i]);
    expect(waits).toEqual([300_000, 300_000, 300_000, 1_000, 2_000]);
    expect(lines.filter((l) => l.level === 'error')).toEqual([{ level: 'error', message: expect.stringContaining('--webhook-addr off') }]);
    expect(lines.filter((l) => l.level === 'debug')).toHaveLength(2);
  });
});
