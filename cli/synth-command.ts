import { join } from 'node:path';
import { loadCheckedConfig } from '../constructs/config-check.js';
import { packageRoot } from '../api/package-root.js';
import { quotaWarning } from '../api/maintenance-problems.js';
import { InputError, type Problem } from '../api/problem.js';
import { readSpecs, specFiles } from './read-specs.js';
import type { RenderHelper } from './render-helper.js';
import { sizeWarning } from '../model/quorum.js';
import { crdManifest, renderManifest } from './render.js';
import { ManifestStaging } from './manifest-staging.js';
import { peerSchemeChanges } from './peer-scheme-guard.js';
import { tlsProviderChanges } from './tls-provider-guard.js';

/** The embedded default: the example specs shipped with the toolkit package (this module's, not the construct library's). */
export const EXAMPLE_SPECS = join(packageRoot(import.meta.url), 'examples');

/** `dkv synth --help`: every flag, so a user never has to read the source to find one. */
export const SYNTH_USAGE = `usage: dkv synth [--specs <file-or-dir>]... [--out <dir>] [--config <file>]
  --specs <file-or-dir>   a spec file, or a directory whose .yaml/.yml files are read (repeatable;
                          default: the bundled examples)
  --out <dir>             where the manifests go (default: dist): one <namespace>.<name>.k8s.yaml
                          per cluster and the CRD
  --config <file>         generator configuration (default: the bundled dkv.config.yaml)
Removes only manifests it wrote earlier from the spec files it reads this run, for clusters no
longer in them; every other file is left alone. Writes nothing unless every spec is valid.
Exit codes: 0 written, 1 invalid input (every problem is listed), 2 usage or internal error.`;

/** `dkv validate --help`. */
export const VALIDATE_USAGE = `usage: dkv validate [<file-or-dir>...] [--config <file>]
  <file-or-dir>           a spec file, or a directory whose .yaml/.yml files are read
                          (default: the bundled examples)
  --config <file>         generator configuration (default: the bundled dkv.config.yaml)
Checks the specs exactly as dkv synth does, without writing anything; warns about what works but
deserves a word (an even size).
Exit codes: 0 valid, 1 invalid input (every problem is listed), 2 usage or internal error.`;

export interface SynthOptions {
  readonly specs: readonly string[];
  readonly outDir: string;
  readonly configFile?: string;
}

export interface SynthReport {
  readonly clusters: number;
  readonly files: number;
  readonly removed: readonly string[];
  readonly skipped: readonly string[];
}

/**
 * Reads, validates and renders every spec, and writes only when all of them
 * are valid: bad input never leaves a directory half-updated. The CLI passes
 * the spec files it already listed (`found`) and, when main.ts started one, a
 * worker thread that renders beside this one (render-helper.ts); `cdk8s
 * synth`'s app (cdk8s-app.ts) passes neither. Each file is staged as soon as
 * it is rendered (manifest-staging.ts), and renamed into place only once
 * every one is rendered and the run is not refused.
 */
export async function synth(options: SynthOptions, found?: ReturnType<typeof specFiles>, helper?: RenderHelper): Promise<SynthReport> {
  const { config, specs, skipped, inputs } = readValid(options, found);
  const { outDir } = options;
  const staging = new ManifestStaging(outDir);
  const files = new Map<string, string>();
  const keep = ([name, content]: [string, string]): void => {
    files.set(name, content);
    staging.stage(name, content);
  };
  try {
    keep(crdManifest(config, outDir));
    if (helper) {
      const { files: rendered } = await helper.render({ specs: specs.map(({ file, resource }) => ({ file, resource })), outDir }, (i) => renderManifest(specs[i], config, outDir));
      rendered.forEach(keep);
    } else {
      for (const spec of specs) {
        keep(renderManifest(spec, config, outDir));
        await letWritesProceed();
      }
    }
    // What runs is what was written last: a change no running cluster survives is refused before anything is written.
    const unsafe = [...peerSchemeChanges(specs, files, outDir), ...tlsProviderChanges(specs, files, outDir)];
    if (unsafe.length > 0) throw new InputError(unsafe);
  } catch (e) {
    await staging.discard();
    throw e;
  }
  const { written, removed } = await staging.commit(inputs);
  return { clusters: specs.length, files: written, removed, skipped };
}

/**
 * Lets the staged writes' callbacks run between two renders: each write is
 * an open, a write and a close on libuv's threads, and each next step starts
 * from this thread's event loop, which a synchronous render would hold.
 */
function letWritesProceed(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The configuration and every spec, or an InputError listing every problem. */
function readValid(options: SynthOptions, found?: ReturnType<typeof specFiles>) {
  const config = loadCheckedConfig(options.configFile);
  const { specs, problems, skipped, inputs } = readSpecs(options.specs, config, found);
  // An empty result is far more often a wrong path than an intent, and writing it would
  // remove every manifest of the files read (and, through GitOps, every such cluster).
  if (problems.length === 0 && specs.length === 0) problems.push(noSpecsFound(options.specs));
  if (problems.length > 0) throw new InputError(problems);
  return { config, specs, skipped, inputs };
}

function noSpecsFound(paths: readonly string[]): Problem {
  return { file: paths.join(', '), path: '', message: 'no DistributedKV documents found (nothing was read, so nothing is written)' };
}

/** Validates only; throws an InputError listing every problem. */
export function validate(paths: readonly string[], configFile?: string): { clusters: number; skipped: readonly string[]; warnings: readonly string[] } {
  const config = loadCheckedConfig(configFile);
  const { specs, problems, skipped } = readSpecs(paths, config);
  if (problems.length === 0 && specs.length === 0) problems.push(noSpecsFound(paths));
  if (problems.length > 0) throw new InputError(problems);
  // What works but deserves a word, as the controller's SizeWarning Event says it (offline: no member count to compare).
  const warnings = specs.flatMap(({ file, line, resource }) => {
    const where = `${file}${line ? `:${line}` : ''}: ${resource.metadata.name}`;
    const size = sizeWarning(resource.spec.size, undefined);
    const quota = quotaWarning(resource.spec);
    return [...(size ? [`${where}: spec.size: ${size}`] : []), ...(quota ? [`${where}: spec.maintenance.quota: ${quota}`] : [])];
  });
  return { clusters: specs.length, skipped, warnings };
}
