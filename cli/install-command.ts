/**
 * `dkv install`: writes the controller's install bundle (constructs/install/)
 * as one deterministic manifest, `<out>/dkv-install.k8s.yaml`, for
 * `kubectl apply -f` or a GitOps repository. This repository commits the
 * default bundle at deploy/ and CI regenerates it. With --monitoring the
 * Grafana dashboard comes too: in the bundle as a ConfigMap and beside it as
 * `<out>/monitoring/dkv-dashboard.json` (a subdirectory, so that
 * `kubectl apply -f <out>` does not take the JSON for a manifest).
 */
import { mkdirSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { parseArgs } from 'node:util';
import { controllerConfiguration } from '../constructs/install/controller-configuration.js';
import { DEFAULT_INSTALL_NAMESPACE } from '../constructs/install/controller-identity.js';
import { DASHBOARD_FILE, dashboardJson } from '../constructs/install/dashboard/dkv-dashboard.js';
import { synthesizeInstall } from '../constructs/install/dkv-install.js';
import type { KubeObject } from '../model/kube-object.js';
import { toYaml } from './render.js';
import { writeFileAtomically } from './write-output.js';

export const INSTALL_FILE = 'dkv-install.k8s.yaml';
/** Where `--monitoring` writes the dashboard's JSON, relative to --out. */
export const DASHBOARD_DIRECTORY = 'monitoring';

export const INSTALL_USAGE = `usage: dkv install --out <dir> [options]
  --out <dir>               where to write ${INSTALL_FILE} (the directory is created)
  --namespace <ns>          where the controller runs (default ${DEFAULT_INSTALL_NAMESPACE}; the bundle creates it)
  --image <ref>             the controller's image, built from the Dockerfile (default: the configuration's
                            backup.runner.image; the shipped configuration's runner image follows --image
                            unless --config names one of its own)
  --replicas <n>            controller replicas, at least 1: one leads, the others wait warm (default 2)
  --watch-namespace <ns>    watch only this namespace (dkv controller --namespace), with the controller's
                            role bound there only (default: every namespace)
  --config <file>           the configuration the controller runs with, shipped in its ConfigMap
                            (default: the bundled dkv.config.yaml)
  --finalizer-policy        also a MutatingAdmissionPolicy (Kubernetes 1.36 or later) that puts the
                            final-backup finalizer on a cluster with backups as it is created: one
                            write fewer per new cluster for the controller (default: the controller adds it)
  --monitoring              turn monitoring on in the shipped configuration (monitoring.enabled, which a
                            --config file may also set): the Prometheus Operator's ServiceMonitor of the
                            controller, the PrometheusRule of the alerts (docs/monitoring.md), every
                            cluster's PodMonitor, and the Grafana dashboard (docs/dashboard.md): a ConfigMap
                            labelled grafana_dashboard: "1" for Grafana's sidecar, and the same JSON in
                            <out>/${DASHBOARD_DIRECTORY}/${DASHBOARD_FILE} to import by hand; needs the
                            Prometheus Operator's CRDs
Writes the namespace, the CRD, the controller's ServiceAccount and least-privilege RBAC, its
configuration, Deployment, metrics Service and PodDisruptionBudget, and the backup runner's ClusterRole.
Exit codes: 0 written, 1 invalid configuration (every problem is listed), 2 usage.`;

export interface InstallOptions {
  readonly namespace?: string;
  readonly image?: string;
  readonly replicas?: number;
  readonly watchNamespace?: string;
  readonly configFile?: string;
  readonly finalizerPolicy?: boolean;
  readonly monitoring?: boolean;
}

/** A flag with a value `dkv install` cannot take. */
export class InstallUsageError extends Error {
  constructor(flag: string, message: string, value?: string) {
    super(`--${flag}: ${message}${value === undefined ? '' : ` (got ${JSON.stringify(value)})`}`);
    this.name = 'InstallUsageError';
  }
}

/** RFC 1123 label: what a namespace's name must be. */
const NAMESPACE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/**
 * An image reference as the container runtimes parse it (distribution's
 * reference grammar): [registry[:port]/]path[:tag][@digest], where the first
 * component is a registry only with a dot, a port or as `localhost`, and a
 * repository path is lower-case.
 */
const IMAGE = (() => {
  const label = '[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?';
  const registry = `(?:localhost|${label}(?:\\.${label})+|${label}(?=:))(?::[0-9]+)?`;
  const component = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
  const tag = '[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}';
  const digest = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}';
  return new RegExp(`^(?:${registry}/)?${component}(?:/${component})*(?::${tag})?(?:@${digest})?$`);
})();

function namespaceFlag(flag: string, value: string | undefined): string | undefined {
  if (value !== undefined && (!NAMESPACE.test(value) || value.length > 63)) {
    throw new InstallUsageError(flag, 'must be a namespace name: at most 63 lower-case letters, digits and \'-\', starting and ending with a letter or digit', value);
  }
  return value;
}

/** `dkv install`'s flags, every value checked before anything is read or written. */
export function parseInstallFlags(args: readonly string[]): InstallOptions & { readonly outDir: string } | { readonly help: true } {
  const { values } = parseArgs({
    args: [...args],
    options: {
      out: { type: 'string' }, namespace: { type: 'string' }, image: { type: 'string' }, replicas: { type: 'string' },
      'watch-namespace': { type: 'string' }, config: { type: 'string' }, 'finalizer-policy': { type: 'boolean' }, monitoring: { type: 'boolean' }, help: { type: 'boolean' },
    },
    allowPositionals: false,
  });
  if (values.help) return { help: true };
  if (values.out === undefined || values.out === '') throw new InstallUsageError('out', 'is required: the directory to write the bundle into');
  const replicas = values.replicas === undefined ? undefined : Number(values.replicas);
  if (replicas !== undefined && (values.replicas!.trim() === '' || !Number.isInteger(replicas) || replicas < 1)) {
    throw new InstallUsageError('replicas', 'must be an integer at least 1', values.replicas);
  }
  if (values.image !== undefined && (values.image.length > 512 || !IMAGE.test(values.image))) {
    throw new InstallUsageError('image', 'must be an image reference, [registry[:port]/]repository[:tag][@sha256:digest]', values.image);
  }
  if (values.config === '') throw new InstallUsageError('config', 'must name a file', values.config);
  return {
    outDir: values.out,
    namespace: namespaceFlag('namespace', values.namespace),
    image: values.image,
    replicas,
    watchNamespace: namespaceFlag('watch-namespace', values['watch-namespace']),
    configFile: values.config,
    finalizerPolicy: values['finalizer-policy'],
    monitoring: values.monitoring,
  };
}

/** The bundle's objects for these options; throws an InputError naming the configuration's problems. */
export function renderInstall(options: InstallOptions = {}): KubeObject[] {
  return renderInstallWith(options).objects;
}

/** The bundle's objects, and whether monitoring is on (the flag, or the configuration file's monitoring.enabled). */
function renderInstallWith(options: InstallOptions): { objects: KubeObject[]; monitoring: boolean } {
  const configuration = controllerConfiguration(options.configFile, options.image, options.namespace, options.monitoring);
  const { namespace, image, replicas, watchNamespace, finalizerPolicy } = options;
  return { objects: synthesizeInstall({ configuration, namespace, image, replicas, watchNamespace, finalizerPolicy }), monitoring: configuration.config.monitoring.enabled };
}

/**
 * The first line of the bundle: what wrote it and with which options, so
 * that it can be regenerated. The configuration file is recorded relative to
 * the output directory, with `/` separators, as `dkv synth` records spec
 * files: the bytes depend on neither the working directory nor the OS.
 */
export function installHeader(outDir: string, options: InstallOptions): string {
  const flags: string[] = [];
  if (options.namespace !== undefined) flags.push(`--namespace=${options.namespace}`);
  if (options.image !== undefined) flags.push(`--image=${options.image}`);
  if (options.replicas !== undefined) flags.push(`--replicas=${options.replicas}`);
  if (options.watchNamespace !== undefined) flags.push(`--watch-namespace=${options.watchNamespace}`);
  if (options.finalizerPolicy) flags.push('--finalizer-policy');
  if (options.monitoring) flags.push('--monitoring');
  if (options.configFile !== undefined) flags.push(`--config=${JSON.stringify(relative(resolve(outDir), resolve(options.configFile)).split(sep).join('/'))}`);
  return `# Generated by dkv install${flags.map((f) => ` ${f}`).join('')}; do not edit.\n`;
}

export async function installCommand(args: string[]): Promise<number> {
  let flags: ReturnType<typeof parseInstallFlags>;
  try {
    flags = parseInstallFlags(args);
  } catch (e) {
    const parseError = e instanceof TypeError && (e as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS');
    if (!(e instanceof InstallUsageError) && !parseError) throw e;
    process.stderr.write(`dkv install: ${(e as Error).message}\n${INSTALL_USAGE}\n`);
    return 2;
  }
  if ('help' in flags) {
    process.stdout.write(INSTALL_USAGE + '\n');
    return 0;
  }
  const { outDir, ...options } = flags;
  const rendered = renderInstallWith(options);
  const text = installHeader(outDir, options) + toYaml(rendered.objects);
  mkdirSync(outDir, { recursive: true });
  writeFileAtomically(outDir, INSTALL_FILE, text);
  process.stderr.write(`wrote ${outDir.replace(/\/$/, '')}/${INSTALL_FILE}\n`);
  if (rendered.monitoring) {
    const dashboardDir = join(outDir, DASHBOARD_DIRECTORY);
    mkdirSync(dashboardDir, { recursive: true });
    writeFileAtomically(dashboardDir, DASHBOARD_FILE, dashboardJson());
    process.stderr.write(`wrote ${join(dashboardDir, DASHBOARD_FILE)}\n`);
  }
  return 0;
}
