/**
 * How far V8 lets the old generation grow past what survived the last full
 * collection before it collects again. V8's default grows it by up to 4x
 * while allocation is fast, which for a controller (a large, stable cache
 * and much short-lived garbage from each reconcile) means resident memory
 * several times the live cache. A fixed 25% bounds it; measured with
 * `npm run bench:controller -- --clusters 10000 --single-only`, set here at
 * start: peak RSS 624 MB -> 379 MB, heap in use once settled 484 MB ->
 * 217 MB, convergence 408 s -> 428 s (runs vary 385-428 s), controller CPU
 * 108 s -> 116 s (more, smaller collections). Given to node on its command
 * line instead: 385 MB, the same within noise.
 */
import { setFlagsFromString } from 'node:v8';

export const HEAP_GROWING_PERCENT = 25;

/** Sets the bound, unless the process was started with its own `--heap-growing-percent`. */
export function boundHeapGrowth(execArgv: readonly string[] = process.execArgv): void {
  if (execArgv.some((arg) => arg.startsWith('--heap-growing-percent') || arg.startsWith('--heap_growing_percent'))) return;
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
