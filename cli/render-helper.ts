/**
 * A second thread for `dkv synth` over many specs. Rendering (cdk8s) is
 * most of a large run's work and each spec renders on its own, so a worker
 * thread renders some of them while this thread renders the others: both
 * take the next spec from one shared counter, so neither waits for the
 * other, however late the worker is ready.
 *
 * The worker starts before the CLI loads its own modules, so its start
 * (loading cdk8s again, on the other core) overlaps this thread's reading
 * and validating. Nothing about the output depends on which thread rendered
 * what: the files are put back in spec order, and a spec the worker could
 * not render (it failed, or the worker did) is rendered again here, so an
 * error is this thread's own and the first in spec order, as when one
 * thread renders all. This module loads nothing but `node:os` and
 * `node:worker_threads`.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

/** Fewer spec files than this render on one thread: the worker's start (some 0.15 s of CPU) would cost more than it saves. */
export const PARALLEL_FROM_FILES = 200;

/**
 * Fewer cores than this render on one thread unless DKV_RENDER_THREADS=2
 * asks for two: on two cores the second thread competes with V8's own
 * garbage-collection and compiler threads, and measured nothing
 * (2026-11-26, 1,000 specs, quiet machine: 0.78 s on one thread, 0.79 s on two).
 */
export const TWO_THREADS_FROM_CORES = 4;

/** What the worker is given: the specs (structured-cloned), the counter both threads claim from, and where the files go (their headers name it). */
export interface RenderJob {
  readonly specs: readonly { readonly file: string; readonly resource: unknown }[];
  readonly counter: SharedArrayBuffer;
  readonly outDir: string;
}

/** What the worker answers: each spec it rendered, by index (it stops at one it cannot render). */
export interface RenderReply {
  readonly rendered: readonly (readonly [index: number, name: string, content: string])[];
}

export interface RenderHelper {
  /**
   * Every spec's [file name, content], in spec order, rendered on both
   * threads, and how many the worker rendered; `renderHere(i)` renders spec
   * i on this thread. Throws what `renderHere` throws for the first spec in
   * order that cannot be rendered.
   */
  render(job: Omit<RenderJob, 'counter'>, renderHere: (index: number) => [string, string]): Promise<{ files: [string, string][]; byWorker: number }>;
  /** Ends the worker (after a run that renders nothing, such as one with invalid specs). */
  stop(): void;
}

/**
 * Starts the worker when it pays: `fileCount` spec files or more, and
 * TWO_THREADS_FROM_CORES cores or more, or `DKV_RENDER_THREADS=2` (on any
 * machine with two cores); `DKV_RENDER_THREADS=1` keeps one thread always.
 * The worker loads the configuration from `configFile` itself.
 */
export function startRenderHelper(fileCount: number, configFile: string | undefined, threshold = PARALLEL_FROM_FILES): RenderHelper | undefined {
  const asked = process.env.DKV_RENDER_THREADS;
  const cores = availableParallelism();
  if (fileCount < threshold || asked === '1' || cores < 2 || (asked !== '2' && cores < TWO_THREADS_FROM_CORES)) return undefined;
  const worker = new Worker(new URL('./render-worker.js', import.meta.url), { workerData: { configFile } });
  worker.unref(); // it never keeps the process alive on its own
  let gone = false;
  const stop = (): void => {
    if (!gone) void worker.terminate();
    gone = true;
  };
  // A worker that fails to start or crashes costs only speed: its specs are rendered here.
  const ended = new Promise<RenderReply>((resolve) => {
    worker.once('message', (reply: RenderReply) => resolve(reply));
    worker.on('error', () => resolve({ rendered: [] }));
    worker.once('exit', () => resolve({ rendered: [] }));
  });
  return {
    stop,
    async render(job, renderHere) {
      const counter = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
      const claims = new Int32Array(counter);
      const files: ([string, string] | undefined)[] = new Array(job.specs.length);
      let failure: { index: number; error: unknown } | undefined;
      let byWorker: number;
      worker.ref(); // waiting for its answer keeps the process alive
      try {
        worker.postMessage({ ...job, counter } satisfies RenderJob);
        for (let i = Atomics.add(claims, 0, 1); i < job.specs.length; i = Atomics.add(claims, 0, 1)) {
          try {
            files[i] = renderHere(i);
          } catch (error) {
            failure = { index: i, error };
            break;
          }
        }
        Atomics.store(claims, 0, job.specs.length); // a worker still starting takes nothing more
        const { rendered } = await ended;
        byWorker = rendered.length;
        for (const [index, name, content] of rendered) files[index] = [name, content];
      } finally {
        stop();
      }
      // In spec order; what the worker did not render is rendered here, so the first failure in order throws.
      const inOrder: [string, string][] = [];
      for (let index = 0; index < job.specs.length; index++) {
        if (failure?.index === index && !files[index]) throw failure.error;
        inOrder.push(files[index] ?? renderHere(index));
      }
      return { files: inOrder, byWorker };
    },
  };
}
