/**
 * Shared fixtures for the generator specifications: DistributedKV documents,
 * the objects they turn into, and the `dkv` CLI run as a user runs it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { loadDefaultConfig, type GeneratorConfig } from '../../api/config.js';
import { packageRoot } from '../../api/package-root.js';
import { API_VERSION, KIND, validateDistributedKV, type ValidResource } from '../../api/validate.js';
import type { KubeObject } from '../../model/kube-object.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';

export const ROOT = packageRoot();
export const DEFAULT_CONFIG = loadDefaultConfig();
export const SIZES = [1, 2, 3, 4, 5, 6, 7, 8, 9] as const;

export interface Backup {
  s3Path: string;
  schedule: string;
  backupImage?: string;
}

export interface ClusterOptions {
  name?: string;
  namespace?: string;
  size?: number;
  image?: string;
  backup?: Backup;
  [field: string]: unknown;
}

export const BACKUP: Backup = { s3Path: 's3://acme-kv-backups/shop/orders', schedule: '0 2 * * *' };

/**
 * YAML whose aliases expand to 9^6 strings from six short lines ("billion
 * laughs"): what a reader that expanded every alias would run out of memory on.
 */
export const ALIAS_BOMB = ['a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]', ...'bcdef'.split('').map((key, i) => `${key}: &${key} [${Array(9).fill(`*${'abcdef'[i]}`).join(', ')}]`), ''].join('\n');

/** A DistributedKV document as a user writes it; extra options land in spec. */
export function kvDocument(options: ClusterOptions = {}): Record<string, unknown> {
  const { name = 'orders', namespace = 'shop', size = 3, image = 'registry.example.com/kv/server:1.4.2', ...spec } = options;
  const metadata: Record<string, string> = { name };
  if (namespace) metadata.namespace = namespace;
  const fields = Object.fromEntries(Object.entries(spec).filter(([, value]) => value !== undefined));
  return { apiVersion: API_VERSION, kind: KIND, metadata, spec: { size, image, ...fields } };
}

/** The document after validation (defaults applied); fails loudly if the fixture itself is invalid. */
export function validResource(document: unknown, config: GeneratorConfig = DEFAULT_CONFIG): ValidResource {
  const result = validateDistributedKV(document, config);
  if (!result.valid) throw new Error(`fixture is invalid: ${JSON.stringify(result.problems)}`);
  return result.resource;
}

/** Kubernetes objects as JSON; tests read fields Kubernetes-style (`spec.clusterIP`). */
export type Manifest = KubeObject & { spec: any; data?: any };

export function synth(options: ClusterOptions = {}, config: GeneratorConfig = DEFAULT_CONFIG): Manifest[] {
  return synthesizeCluster(validResource(kvDocument(options), config), config) as Manifest[];
}

/** The objects of one cluster by role; the headless Service is the one with no cluster IP. */
export function byRole(objects: readonly Manifest[]): {
  statefulSet: Manifest;
  headless: Manifest;
  client: Manifest;
  pdb: Manifest;
  cronJob: Manifest | undefined;
  /** The etcd engine's member ConfigMap. */
  memberConfig: Manifest | undefined;
} {
  const one = (matches: Manifest[], what: string): Manifest => {
    if (matches.length !== 1) throw new Error(`expected exactly one ${what}, found ${matches.length}`);
    return matches[0];
  };
  const services = objects.filter((o) => o.kind === 'Service');
  const cronJobs = objects.filter((o) => o.kind === 'CronJob');
  if (cronJobs.length > 1) throw new Error(`expected at most one CronJob, found ${cronJobs.length}`);
  return {
    statefulSet: one(objects.filter((o) => o.kind === 'StatefulSet'), 'StatefulSet'),
    headless: one(services.filter((s) => s.spec.clusterIP === 'None'), 'headless Service'),
    client: one(services.filter((s) => s.spec.clusterIP !== 'None'), 'client Service'),
    pdb: one(objects.filter((o) => o.kind === 'PodDisruptionBudget'), 'PodDisruptionBudget'),
    cronJob: cronJobs[0],
    memberConfig: objects.find((o) => o.kind === 'ConfigMap'),
  };
}

/** `Kind/name` → hash annotation, for comparing what a change touches. */
export function hashes(objects: readonly KubeObject[], config: GeneratorConfig = DEFAULT_CONFIG): Map<string, string> {
  return new Map(objects.map((o) => [`${o.kind}/${o.metadata.name}`, o.metadata.annotations?.[config.hashAnnotation] ?? '']));
}

/** The keys (`Kind/name`) whose hash differs between two renders, including objects only one of them has. */
export function changedObjects(before: Map<string, string>, after: Map<string, string>): string[] {
  const keys = new Set([...before.keys(), ...after.keys()]);
  return [...keys].filter((k) => before.get(k) !== after.get(k)).sort();
}

/** True when a label selector (matchLabels) selects a pod with these labels. */
export function selects(selector: Record<string, string>, labels: Record<string, string> | undefined): boolean {
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

const temporaryDirectories: string[] = [];

/** A fresh directory, removed by removeTemporaryDirectories (call it from afterAll). */
export function temporaryDirectory(prefix = 'dkv-generator-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  temporaryDirectories.push(dir);
  return dir;
}

export function removeTemporaryDirectories(): void {
  for (const dir of temporaryDirectories.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Every file under `dir` (relative path → bytes), hidden files included: the whole observable state of a directory. */
export function readTree(dir: string): Record<string, Buffer> {
  const out: Record<string, Buffer> = {};
  const walk = (current: string): void => {
    for (const entry of readdirSync(current).sort()) {
      const path = join(current, entry);
      if (statSync(path).isDirectory()) walk(path);
      else out[relative(dir, path)] = readFileSync(path);
    }
  };
  walk(dir);
  return out;
}

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

const DKV_BIN = join(ROOT, 'bin', 'dkv.js');

/** Jest timeout for a test that starts the CLI: generous, since CI machines are shared; nothing asserts on speed. */
export const CLI_TIMEOUT_MS = 30_000;

/** Runs the compiled CLI (`npm run build` / `npm ci` produce lib/) in `cwd`, as a user would, with `environment` over this process's. */
export function dkv(args: readonly string[], cwd: string = ROOT, environment: NodeJS.ProcessEnv = {}): CliResult {
  if (!existsSync(join(ROOT, 'lib', 'cli', 'main.js'))) {
    throw new Error('lib/cli/main.js is missing: run `npm run build` before the CLI specifications');
  }
  const env = { ...process.env, ...environment };
  delete env.DKV_DEBUG; // stack traces only when a developer asks for them
  const result = spawnSync(process.execPath, [DKV_BIN, ...args], { cwd, encoding: 'utf8', env });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}
