/**
 * Polls `check` until it returns a value other than undefined; fails with
 * `what` after the deadline, or at once when `givenUp` names a reason (a
 * process that exited, say). Every wait in tests and in the test control
 * plane goes through this: never a fixed sleep.
 */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  deadlineMs = 20_000,
  intervalMs = 50,
  givenUp: () => string | undefined = () => undefined,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  let lastError: unknown;
  for (;;) {
    const reason = givenUp();
    if (reason) throw new Error(`gave up waiting for ${what}: ${reason}`);
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** `true`, or undefined for "not yet": adapts a yes/no check to `eventually`. */
export const yes = (ok: boolean): true | undefined => (ok ? true : undefined);
