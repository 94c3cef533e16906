import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ValidateFunction } from 'ajv';
import { isMap, isSeq, LineCounter, parseDocument, type Node } from 'yaml';
import { packageRoot } from './package-root.js';
import type { GeneratorConfig } from '../model/generator-config.js';
import { InputError, yamlProblem, yamlValue, type Problem } from './problem.js';
import { dottedPath } from '../model/field-path.js';
import { fieldProblems } from './schema-errors.js';
import { validateConfigOverrides } from '../imports/config-validator.js';

export type { CertManagerIssuerRef, ContainerResources, EngineName, GeneratorConfig, JsonPatchOperation, PatchableKind, ResourceQuantity } from '../model/generator-config.js';

/** A configuration file as written: every key optional, merged over the default. */
export type ConfigOverrides = { [K in Exclude<keyof GeneratorConfig, 'file'>]?: Partial<GeneratorConfig[K]> };

const root = packageRoot();
export const DEFAULT_CONFIG_FILE = join(root, 'dkv.config.yaml');
/** api/config.schema.json's validator, compiled at build time (api/validator-code.ts). */
const validateOverrides = validateConfigOverrides as ValidateFunction<ConfigOverrides>;

function parseConfigFile(file: string, text: string): ConfigOverrides {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: true });
  if (doc.errors.length > 0) {
    throw new InputError(doc.errors.map((e) => yamlProblem(file, e)));
  }
  const converted = yamlValue(file, doc);
  if ('problem' in converted) throw new InputError([converted.problem]);
  const value = (converted.value ?? {}) as ConfigOverrides;
  const problems: Problem[] = [];
  if (!validateOverrides(value)) {
    for (const p of fieldProblems(validateOverrides.errors)) {
      const node = doc.getIn(p.segments, true) as Node | undefined;
      const offset = node && (isMap(node) || isSeq(node) || 'range' in node) ? node.range?.[0] : undefined;
      problems.push({ file, path: dottedPath(p.segments), message: p.message, line: offset !== undefined ? lineCounter.linePos(offset).line : undefined });
    }
  }
  if (problems.length > 0) throw new InputError(problems);
  return value;
}

function merge(base: GeneratorConfig, overrides: ConfigOverrides, file: string): GeneratorConfig {
  return {
    file,
    names: { ...base.names, ...overrides.names },
    labels: overrides.labels ? { ...overrides.labels } as Record<string, string> : base.labels,
    selectorLabels: (overrides.selectorLabels as string[] | undefined) ?? base.selectorLabels,
    annotations: { ...base.annotations, ...overrides.annotations } as Record<string, string>,
    hashAnnotation: (overrides.hashAnnotation as string | undefined) ?? base.hashAnnotation,
    engine: (overrides.engine as GeneratorConfig['engine'] | undefined) ?? base.engine,
    clusterDomain: (overrides.clusterDomain as string | undefined) ?? base.clusterDomain,
    ports: { ...base.ports, ...overrides.ports },
    dataPath: (overrides.dataPath as string | undefined) ?? base.dataPath,
    // A resources map replaces the default whole: requests and limits are chosen together (docs/maintenance.md).
    members: { ...base.members, ...overrides.members },
    restore: { ...base.restore, ...overrides.restore },
    patches: { ...base.patches, ...overrides.patches } as GeneratorConfig['patches'],
    controller: { ...base.controller, ...overrides.controller },
    conversion: { ...base.conversion, ...overrides.conversion },
    tls: mergeTls(base.tls, overrides.tls as TlsOverrides | undefined),
    clients: { ...base.clients, ...overrides.clients },
    fleet: { ...base.fleet, ...overrides.fleet },
    sharding: { ...base.sharding, ...overrides.sharding },
    maintenance: { ...base.maintenance, ...overrides.maintenance },
    healing: { ...base.healing, ...overrides.healing },
    // A labels map replaces the default whole, as the top-level labels do: a label can be dropped.
    monitoring: { ...base.monitoring, ...overrides.monitoring } as GeneratorConfig['monitoring'],
    networkPolicy: mergeNetworkPolicy(base.networkPolicy, overrides.networkPolicy as NetworkPolicyOverrides | undefined),
    backup: mergeBackup(base.backup, overrides.backup as BackupOverrides | undefined),
  };
}

type TlsConfig = GeneratorConfig['tls'];
type TlsOverrides = Partial<Omit<TlsConfig, 'certManager'>> & { certManager?: { issuerRef?: Partial<TlsConfig['certManager']['issuerRef']> } };

/** The tls section merges key by key, its certManager.issuerRef too: a file that names only the issuer keeps the default kind and group. */
function mergeTls(base: TlsConfig, overrides: TlsOverrides | undefined): TlsConfig {
  return {
    ...base, ...overrides,
    certManager: { issuerRef: { ...base.certManager.issuerRef, ...overrides?.certManager?.issuerRef } },
  };
}

type NetworkPolicyConfig = GeneratorConfig['networkPolicy'];
type NetworkPolicyOverrides = Partial<Omit<NetworkPolicyConfig, 'controller'>> & { controller?: Partial<NetworkPolicyConfig['controller']> };

/**
 * The networkPolicy section merges key by key, its controller map too, but a
 * selector given replaces the default whole: merged label by label, a
 * selector of other labels would still require the default's.
 */
function mergeNetworkPolicy(base: NetworkPolicyConfig, overrides: NetworkPolicyOverrides | undefined): NetworkPolicyConfig {
  return {
    enabled: overrides?.enabled ?? base.enabled,
    metricsNamespaceSelector: overrides?.metricsNamespaceSelector ?? base.metricsNamespaceSelector,
    controller: { ...base.controller, ...overrides?.controller },
  };
}

type BackupConfig = GeneratorConfig['backup'];
type BackupOverrides = Partial<Pick<BackupConfig, 'retain'>> & { [K in 's3' | 'final' | 'runner' | 'volumeSnapshots' | 'definitions']?: Partial<BackupConfig[K]> };

/** The backup section merges one level deeper: its maps (s3, final, runner, volumeSnapshots, definitions) key by key too. */
function mergeBackup(base: BackupConfig, overrides: BackupOverrides | undefined): BackupConfig {
  return {
    retain: overrides?.retain ?? base.retain,
    s3: { ...base.s3, ...overrides?.s3 },
    final: { ...base.final, ...overrides?.final },
    runner: { ...base.runner, ...overrides?.runner },
    volumeSnapshots: { ...base.volumeSnapshots, ...overrides?.volumeSnapshots },
    definitions: { ...base.definitions, ...overrides?.definitions },
  };
}

let defaultConfig: GeneratorConfig | undefined;

/** The built-in configuration (`dkv.config.yaml`). */
export function loadDefaultConfig(): GeneratorConfig {
  if (!defaultConfig) {
    const overrides = parseConfigFile(DEFAULT_CONFIG_FILE, readFileSync(DEFAULT_CONFIG_FILE, 'utf8'));
    defaultConfig = { ...overrides, file: DEFAULT_CONFIG_FILE } as GeneratorConfig;
  }
  return defaultConfig;
}

/**
 * Loads a configuration file over the default. Throws an InputError naming
 * the file, the field and the line of every problem its schema finds. What
 * only shows in what it generates is checked by checkConfig
 * (constructs/config-check.ts), which entry points call.
 */
export function loadConfig(file?: string): GeneratorConfig {
  const base = loadDefaultConfig();
  if (!file) return base;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new InputError([{ file, path: '', message: `cannot read: ${(e as NodeJS.ErrnoException).code ?? String(e)}` }]);
  }
  return merge(base, parseConfigFile(file, text), file);
}
