/**
 * Seconds a test measured, reported beside the bound they used to be held to,
 * never asserted: how long a hand-over or an alert takes depends on the
 * machine's load, and a test asserts the order and the mechanism (the Lease
 * expired first, nothing lost). `npm test` (scripts/test-lanes.ts) prints
 * every figure of the run in one table at its end, marking those over their
 * bound, so a slowdown is seen without failing a build on a busy machine.
 */
import { appendFileSync } from 'node:fs';

export interface TimingFigure {
  /** What was timed, as a reader of the table needs it named. */
  readonly what: string;
  readonly ms: number;
  /** The bound this figure is expected to stay within on a quiet machine, and what it is made of. */
  readonly boundMs: number;
  readonly bound: string;
}

/** Prints the figure and, under `npm test`, records it for the run's table (DKV_TIMING_FIGURES). */
export function reportTiming(figure: TimingFigure): void {
  const over = figure.ms > figure.boundMs ? ' (OVER its bound: a loaded machine, or slower than it was)' : '';
  process.stdout.write(`timing: ${figure.what}: ${figure.ms} ms, bound ${figure.boundMs} ms (${figure.bound})${over}\n`);
  const file = process.env.DKV_TIMING_FIGURES;
  if (file) appendFileSync(file, `${JSON.stringify(figure)}\n`);
}
