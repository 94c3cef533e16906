/**
 * How the conversion service retries what may fail for a while (the
 * certificate Secret, the listener, the storage migration): exponential
 * backoff from seconds, and a missing namespace, which only a person fixes,
 * said once and looked at again slowly.
 */
import type { Clock } from '../kube/clock.js';
import type { Logger } from '../kube/log.js';
import { MissingNamespaceError } from './certificate-rotation.js';

export interface Retry {
  readonly baseMs: number;
  readonly maxMs: number;
  /** After a MissingNamespaceError: set-up only a person fixes, so no point in asking every few seconds. */
  readonly missingNamespaceMs: number;
}

/**
 * Retries `attempt` with exponential backoff until it succeeds or `stopped()`; `attempt` is never run twice at once.
 * A missing namespace is logged once (an error: the webhook cannot serve until someone acts) and retried slowly.
 */
export async function withBackoff<T>(clock: Clock, retry: Retry, stopped: () => boolean, log: Logger, what: string, attempt: () => Promise<T>): Promise<T | undefined> {
  let toldMissingNamespace = false;
  // Only ordinary failures grow the backoff: once a missing namespace appears, the next error is retried after seconds.
  let failures = 0;
  while (!stopped()) {
    try {
      return await attempt();
    } catch (e) {
      let delayMs: number;
      if (e instanceof MissingNamespaceError) {
        delayMs = retry.missingNamespaceMs;
        if (toldMissingNamespace) log.debug(`${what}: namespace still missing`, { namespace: e.namespace, retryInMs: delayMs });
        else log.error(e.message, { namespace: e.namespace, retryInMs: delayMs });
        toldMissingNamespace = true;
      } else {
        delayMs = Math.min(retry.maxMs, retry.baseMs * 2 ** failures++);
        log.warn(`${what} failed: retrying`, { error: (e as Error).message, retryInMs: delayMs });
      }
      await new Promise<void>((resolve) => clock.after(delayMs, resolve).unref());
    }
  }
  return undefined;
}
