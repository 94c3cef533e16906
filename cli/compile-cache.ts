/**
 * Node.js's on-disk compile cache for the dkv CLI. A `dkv synth` loads some
 * 350 modules (cdk8s and cdk8s-plus-27 are large); compiling them again on
 * every run is a good part of its start. With the cache, each run after the
 * first reads V8's code for them from disk instead.
 *
 * The cache lives in the toolkit's own `node_modules/.cache/`, writable only
 * by whoever installed it, and not in the shared temporary directory, where
 * another user could leave files for a run to load. Node.js keys it by its
 * version and each file's contents, so an upgrade or an edit never uses a
 * stale entry. Where it cannot be written (a read-only image, a global
 * install run by another user) it is simply not used: Node.js reports that
 * in the returned status, never as an error, and the run is only slower.
 * `NODE_DISABLE_COMPILE_CACHE=1` turns it off, `NODE_COMPILE_CACHE=<dir>`
 * puts it elsewhere (both Node.js's own variables).
 *
 * bin/dkv.js calls this after the Node.js check and before it loads the CLI;
 * this module imports only `node:module`.
 */
import module from 'node:module';

/** Turns the cache on in `directory` (unless the environment says otherwise) and returns what Node.js says it did. */
export function useCompileCache(directory: string): { readonly enabled: boolean; readonly message?: string } {
  try {
    const result = module.enableCompileCache(directory);
    const { ENABLED, ALREADY_ENABLED } = module.constants.compileCacheStatus;
    return { enabled: result.status === ENABLED || result.status === ALREADY_ENABLED, ...(result.message ? { message: result.message } : {}) };
  } catch (e) {
    return { enabled: false, message: e instanceof Error ? e.message : String(e) };
  }
}
