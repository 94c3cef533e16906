/**
 * `dkv import`: applies the definitions `dkv export` wrote (or any spec files
 * `dkv synth` takes) to a cluster. It is safe to run twice and never
 * silently replaces a spec someone changed since the export: it plans every
 * file before writing any, and writes only when the plan holds no surprise.
 */
import { isDeepStrictEqual, parseArgs } from 'node:util';
import { loadCheckedConfig } from '../constructs/config-check.js';
import { InputError, type Problem } from '../api/problem.js';
import { API_VERSION, KIND } from '../api/validate.js';
import { KubeApiError, KubeClient, resourcePath } from '../kube/client.js';
import { exportedDefinition, type ExportedDistributedKV, type LiveDistributedKV } from '../api/exported-definition.js';
import { readSpecs, type SpecDocument } from './read-specs.js';

/** The field manager of every write, so `managedFields` shows who restored the spec. */
export const IMPORT_FIELD_MANAGER = 'dkv-import';

export const IMPORT_USAGE = `usage: dkv import --from <dir> [--kubeconfig <file>] [--overwrite] [--config <file>]
  --from <dir>              the definitions to apply: a directory dkv export wrote (or any spec file or
                            directory dkv synth takes)
  --kubeconfig <file>       the cluster to write (default: $KUBECONFIG, ~/.kube/config, or in-cluster)
  --overwrite               server-side apply (field manager ${IMPORT_FIELD_MANAGER}) the file's spec over a
                            DistributedKV that exists with a different one, instead of refusing
  --config <file>           generator configuration the files are validated with, as dkv synth does
                            (default: the bundled dkv.config.yaml)
Creates each DistributedKV that is missing and leaves alone one that exists with the same spec, so a
second import changes nothing. Every file is validated first, and every cluster is compared before
anything is written: a bad file, a missing namespace or (without --overwrite) a spec that differs is
listed and nothing at all is written.
Exit codes: 0 imported, 1 invalid file or refused (every problem is listed), 2 usage error, or the
cluster could not be reached.`;

type Planned =
  | { readonly action: 'create'; readonly source: SpecDocument; readonly definition: ExportedDistributedKV }
  | { readonly action: 'unchanged'; readonly source: SpecDocument; readonly definition: ExportedDistributedKV }
  | Differing<'overwrite'>
  | Differing<'refuse'>;

/** A cluster that exists with another spec: overwritten with --overwrite, refused without. */
interface Differing<A extends 'overwrite' | 'refuse'> {
  readonly action: A;
  readonly source: SpecDocument;
  readonly definition: ExportedDistributedKV;
  readonly differences: readonly string[];
}

/** The dotted paths at which two JSON values differ (a whole subtree once, at its root). */
export function differingPaths(a: unknown, b: unknown, path: string): string[] {
  const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (isDeepStrictEqual(a, b)) return [];
  if (!isMap(a) || !isMap(b)) return [path];
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].sort().flatMap((key) => differingPaths(a[key], b[key], `${path}.${key}`));
}

const key = (d: ExportedDistributedKV): string => `${d.metadata.namespace}/${d.metadata.name}`;

/** Reads what each file would touch; writes nothing. Missing namespaces come back as problems. */
async function plan(client: KubeClient, specs: readonly SpecDocument[], overwrite: boolean): Promise<{ steps: Planned[]; problems: Problem[] }> {
  const problems: Problem[] = [];
  const namespaces = new Map<string, boolean>();
  const steps: Planned[] = [];
  for (const source of specs) {
    // The allow list of the export: server-set metadata and a status in a file are never sent.
    const definition = exportedDefinition(source.resource as unknown as LiveDistributedKV);
    const namespace = definition.metadata.namespace!;
    if (!namespaces.has(namespace)) namespaces.set(namespace, await exists(client, resourcePath('v1', 'Namespace', undefined, namespace)));
    if (!namespaces.get(namespace)) {
      problems.push({ file: source.file, path: 'metadata.namespace', line: source.line, message: `namespace ${JSON.stringify(namespace)} does not exist on ${client.server}; create it first` });
      continue;
    }
    const live = await get(client, resourcePath(API_VERSION, KIND, namespace, definition.metadata.name));
    if (!live) steps.push({ action: 'create', source, definition });
    else if (isDeepStrictEqual(live.spec ?? {}, definition.spec)) steps.push({ action: 'unchanged', source, definition });
    else steps.push({ action: overwrite ? 'overwrite' : 'refuse', source, definition, differences: differingPaths(live.spec ?? {}, definition.spec, 'spec') });
  }
  return { steps, problems };
}

async function get(client: KubeClient, path: string): Promise<LiveDistributedKV | undefined> {
  try {
    return await client.request<LiveDistributedKV>('GET', path);
  } catch (e) {
    if (e instanceof KubeApiError && e.status === 404) return undefined;
    throw e;
  }
}

const exists = async (client: KubeClient, path: string): Promise<boolean> => (await get(client, path)) !== undefined;

async function write(client: KubeClient, step: Planned): Promise<string> {
  const { definition } = step;
  if (step.action === 'create') {
    await client.request('POST', resourcePath(API_VERSION, KIND, definition.metadata.namespace), {
      query: { fieldManager: IMPORT_FIELD_MANAGER, fieldValidation: 'Strict' },
      body: definition,
    });
    return `created ${key(definition)} from ${step.source.file}`;
  }
  if (step.action === 'overwrite') {
    // Forced: the fields belong to whoever wrote them since the export, and --overwrite says to take them.
    const applied = await client.apply<LiveDistributedKV>(definition, { fieldManager: IMPORT_FIELD_MANAGER, force: true });
    // Apply sets what the file holds; a field another manager added that the file lacks stays.
    const left = differingPaths(applied.spec ?? {}, definition.spec, 'spec');
    if (left.length > 0) throw new Error(`${key(definition)}: applied ${step.source.file}, but ${left.join(', ')} still differ: fields another field manager set that the file does not hold; remove them by hand (kubectl edit)`);
    return `overwrote ${key(definition)} from ${step.source.file} (was different at ${step.differences.join(', ')})`;
  }
  return `unchanged ${key(definition)} (${step.source.file})`;
}

export async function importCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { from: { type: 'string' }, kubeconfig: { type: 'string' }, overwrite: { type: 'boolean' }, config: { type: 'string' }, help: { type: 'boolean' } },
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(IMPORT_USAGE + '\n');
    return 0;
  }
  if (!values.from) {
    process.stderr.write(`dkv import: --from is required: the directory dkv export wrote\n${IMPORT_USAGE}\n`);
    return 2;
  }
  // The same reading and validation as dkv synth: what one accepts, the other does.
  const config = loadCheckedConfig(values.config);
  const { specs, problems, skipped } = readSpecs([values.from], config);
  for (const { file, resource, line } of specs) {
    if (!resource.metadata.namespace) problems.push({ file, line, path: 'metadata.namespace', message: 'required field is missing: dkv import creates each DistributedKV in the namespace its file names' });
  }
  if (problems.length === 0 && specs.length === 0) problems.push({ file: values.from, path: '', message: 'no DistributedKV documents found (nothing to import)' });
  if (problems.length > 0) throw new InputError(problems);
  for (const s of skipped) process.stderr.write(`skipped (not a DistributedKV): ${s}\n`);

  const client = KubeClient.fromKubeconfig(values.kubeconfig);
  try {
    let planned;
    try {
      planned = await plan(client, specs, values.overwrite === true);
    } catch (e) {
      process.stderr.write(`dkv import: cannot read the cluster at ${client.server}: ${(e as Error).message}\n`);
      return 2;
    }
    const refused = planned.steps.filter((s): s is Differing<'refuse'> => s.action === 'refuse');
    for (const step of refused) {
      planned.problems.push({
        file: step.source.file, path: 'spec', line: step.source.line,
        message: `DistributedKV ${JSON.stringify(key(step.definition))} exists with a different spec (differs at ${step.differences.join(', ')}); --overwrite applies the file's spec`,
      });
    }
    if (planned.problems.length > 0) throw new InputError(planned.problems);
    let failed = 0;
    for (const step of planned.steps) {
      try {
        process.stderr.write(`${await write(client, step)}\n`);
      } catch (e) {
        failed++;
        process.stderr.write(`dkv import: ${key(step.definition)} (${step.source.file}): ${(e as Error).message}\n`);
      }
    }
    return failed > 0 ? 1 : 0;
  } finally {
    client.close();
  }
}
