/**
 * The worker thread of render-helper.ts: loads the configuration and the
 * generator, then renders specs claimed from the shared counter until none
 * is left, and answers with what it rendered. It stops at the first spec it
 * cannot render; the main thread renders that one again and throws its
 * error, so no error is reported from here.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { GeneratorConfig } from '../api/config.js';
import { loadCheckedConfig } from '../constructs/config-check.js';
import type { RenderJob, RenderReply } from './render-helper.js';
import { renderManifest } from './render.js';
import type { SpecDocument } from './read-specs.js';

let config: GeneratorConfig | undefined;
try {
  config = loadCheckedConfig((workerData as { configFile?: string }).configFile);
} catch {
  config = undefined; // the main thread reports a bad configuration; without one this thread renders nothing
}

parentPort!.once('message', ({ specs, counter, outDir }: RenderJob) => {
  const claims = new Int32Array(counter);
  const rendered: [number, string, string][] = [];
  for (let i = config ? Atomics.add(claims, 0, 1) : specs.length; i < specs.length; i = Atomics.add(claims, 0, 1)) {
    try {
      rendered.push([i, ...renderManifest(specs[i] as Pick<SpecDocument, 'file' | 'resource'>, config!, outDir)]);
    } catch {
      break; // the main thread renders this one again and throws its error
    }
  }
  parentPort!.postMessage({ rendered } satisfies RenderReply);
});
