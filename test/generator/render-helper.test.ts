// Slow: dkv synth over 240 specs on one thread and on two, compared file by file, and the threads' hand-over driven with waits (about 1 minute on 2 cores).
/**
 * dkv synth over many specs renders on two threads (cli/render-helper.ts)
 * and writes exactly what one thread writes: the same files, the same
 * bytes, and for a spec that cannot be rendered the same error, the first
 * in spec order.
 */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { stringify } from 'yaml';
import { API_VERSION, KIND } from '../../api/validate.js';
import { renderManifest } from '../../cli/render.js';
import type * as RenderHelperModule from '../../cli/render-helper.js';
import { fleetSpec } from '../support/fleet-specs.js';
import { CLI_TIMEOUT_MS, DEFAULT_CONFIG, dkv, readTree, removeTemporaryDirectories, ROOT, temporaryDirectory, validResource } from './support.js';

afterAll(removeTemporaryDirectories);

/** The compiled helper, so its worker (lib/cli/render-worker.js) exists beside it. */
async function compiledHelper(): Promise<typeof RenderHelperModule> {
  return (await import(pathToFileURL(join(ROOT, 'lib', 'cli', 'render-helper.js')).href)) as typeof RenderHelperModule;
}

function fleetDocument(i: number): Record<string, unknown> {
  const name = `kv-${String(i).padStart(4, '0')}`;
  const namespace = `team-${i % 10}`;
  return { apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace }, spec: fleetSpec(i, name, namespace) };
}

/** Blocks this thread for `ms` (a spec that takes long to render, so the worker gets its share). */
function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** A helper started as DKV_RENDER_THREADS=2 asks, whatever this machine's cores. */
function asTwoThreads<T>(start: () => T | undefined): T {
  process.env.DKV_RENDER_THREADS = '2';
  try {
    return start()!;
  } finally {
    delete process.env.DKV_RENDER_THREADS;
  }
}

describe('dkv synth on two threads', () => {
  it('writes the same files, byte for byte, as on one thread', () => {
    const dir = temporaryDirectory();
    const specs = join(dir, 'specs');
    mkdirSync(specs);
    for (let i = 0; i < 240; i++) writeFileSync(join(specs, `kv-${i}.yaml`), stringify(fleetDocument(i)));
    const two = dkv(['synth', '--specs', specs, '--out', 'two'], dir, { DKV_RENDER_THREADS: '2' });
    const one = dkv(['synth', '--specs', specs, '--out', 'one'], dir, { DKV_RENDER_THREADS: '1' });
    expect(two).toMatchObject({ status: 0, stderr: 'synthesized 240 cluster(s) into two (241 files)\n' });
    expect(one).toMatchObject({ status: 0, stderr: 'synthesized 240 cluster(s) into one (241 files)\n' });
    expect(readdirSync(join(dir, 'two'))).toHaveLength(241);
    expect(readTree(join(dir, 'two'))).toEqual(readTree(join(dir, 'one')));
  }, CLI_TIMEOUT_MS);

  it('puts what each thread rendered back in spec order, the worker rendering its share', async () => {
    const { startRenderHelper } = await compiledHelper();
    const specs = Array.from({ length: 80 }, (_, i) => ({ file: `/specs/kv-${i}.yaml`, resource: validResource(fleetDocument(i)) }));
    const helper = asTwoThreads(() => startRenderHelper(specs.length, undefined, 1));
    expect(helper).toBeDefined();
    let here = 0;
    const { files, byWorker } = await helper.render({ specs, outDir: '/out' }, (i) => {
      here++;
      sleep(50); // at most 80 × 50 ms: the worker starts well within that
      return renderManifest(specs[i], DEFAULT_CONFIG, '/out');
    });
    expect(byWorker).toBeGreaterThan(0);
    expect(here + byWorker).toBe(specs.length);
    expect(files).toEqual(specs.map((spec) => renderManifest(spec, DEFAULT_CONFIG, '/out')));
  }, CLI_TIMEOUT_MS);

  it('throws this thread\'s error for the first spec in order that cannot be rendered, whichever thread met it', async () => {
    const { startRenderHelper } = await compiledHelper();
    const good = Array.from({ length: 60 }, (_, i) => ({ file: `/specs/kv-${i}.yaml`, resource: validResource(fleetDocument(i)) as unknown }));
    const specs = good.map((spec, i) => (i === 7 || i === 41 ? { file: spec.file, resource: { metadata: {} } } : spec));
    const renderHere = (i: number): [string, string] => {
      sleep(20);
      if (i === 7) throw new Error('spec 7 cannot be rendered');
      if (i === 41) throw new Error('spec 41 cannot be rendered');
      return renderManifest(specs[i] as (typeof good)[number] & { resource: ReturnType<typeof validResource> }, DEFAULT_CONFIG, '/out');
    };
    const helper = asTwoThreads(() => startRenderHelper(specs.length, undefined, 1));
    await expect(helper.render({ specs, outDir: '/out' }, renderHere)).rejects.toThrow('spec 7 cannot be rendered');
    // Spec 41 alone: this thread is slow, so the worker, started by then, most likely meets it first and stops there.
    const late = good.map((spec, i) => (i === 41 ? { file: spec.file, resource: { metadata: {} } } : spec));
    const slowHere = (i: number): [string, string] => {
      sleep(50);
      if (i === 41) throw new Error('spec 41 cannot be rendered');
      return renderManifest(late[i] as (typeof good)[number] & { resource: ReturnType<typeof validResource> }, DEFAULT_CONFIG, '/out');
    };
    await expect(asTwoThreads(() => startRenderHelper(late.length, undefined, 1)).render({ specs: late, outDir: '/out' }, slowHere)).rejects.toThrow('spec 41 cannot be rendered');
  }, CLI_TIMEOUT_MS);

  it('renders on one thread below the threshold, below four cores unless asked for two, or when DKV_RENDER_THREADS=1', async () => {
    const { startRenderHelper, PARALLEL_FROM_FILES, TWO_THREADS_FROM_CORES } = await compiledHelper();
    expect(startRenderHelper(PARALLEL_FROM_FILES - 1, undefined)).toBeUndefined();
    const byDefault = startRenderHelper(PARALLEL_FROM_FILES, undefined);
    expect(byDefault !== undefined).toBe(availableParallelism() >= TWO_THREADS_FROM_CORES);
    byDefault?.stop();
    try {
      process.env.DKV_RENDER_THREADS = '1';
      expect(startRenderHelper(PARALLEL_FROM_FILES, undefined)).toBeUndefined();
      process.env.DKV_RENDER_THREADS = '2';
      const asked = startRenderHelper(PARALLEL_FROM_FILES, undefined);
      expect(asked).toBeDefined();
      asked!.stop();
    } finally {
      delete process.env.DKV_RENDER_THREADS;
    }
  });
});
