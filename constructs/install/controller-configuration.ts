import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { DEFAULT_CONFIG_FILE, type GeneratorConfig } from '../../api/config.js';
import { loadCheckedConfig } from '../config-check.js';

const RUNNER_IMAGE = ['backup', 'runner', 'image'];
const CONTROLLER_NAMESPACE = ['networkPolicy', 'controller', 'namespaceSelector'];
const MONITORING = ['monitoring', 'enabled'];
/** Set by Kubernetes on every namespace: its name. */
const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/** A configuration as the controller will run with it: checked, and the file to ship. */
export interface ControllerConfiguration {
  /** Merged over the defaults and checked, as `dkv controller --config` will load it. */
  readonly config: GeneratorConfig;
  /** The file the controller's ConfigMap holds. */
  readonly text: string;
}

/**
 * The configuration file to install with the controller: `file` (merged over
 * the defaults, as every entry point does) or the built-in dkv.config.yaml,
 * loaded and checked, so a bad one fails here naming its file and field
 * rather than in the controller's crash loop.
 *
 * The backup runner is the controller's own image (it holds `dkv` and
 * `etcdutl`), so with `image` the shipped file's backup.runner.image
 * follows it, unless `file` names a runner image of its own. Likewise the
 * clusters' NetworkPolicies admit the controller from the namespace it is
 * installed in: with `namespace`, the shipped file's
 * networkPolicy.controller.namespaceSelector names it, unless `file` names
 * a selector of its own. With `monitoring` (`dkv install --monitoring`), the
 * shipped file turns monitoring on: the one switch, so the controller's
 * PodMonitors and the bundle's ServiceMonitor and alert rules come and go
 * together.
 */
export function controllerConfiguration(file?: string, image?: string, namespace?: string, monitoring = false): ControllerConfiguration {
  let config = loadCheckedConfig(file);
  let text = readFileSync(file ?? DEFAULT_CONFIG_FILE, 'utf8');
  const ownRunner = file !== undefined && parseDocument(text).hasIn(RUNNER_IMAGE);
  if (image !== undefined && image !== config.backup.runner.image && !ownRunner) {
    const document = parseDocument(text);
    document.setIn(RUNNER_IMAGE, image);
    text = document.toString();
    config = { ...config, backup: { ...config.backup, runner: { ...config.backup.runner, image } } };
  }
  const ownControllerNamespace = file !== undefined && parseDocument(text).hasIn(CONTROLLER_NAMESPACE);
  const namespaceSelector = namespace === undefined ? undefined : { matchLabels: { [NAMESPACE_NAME_LABEL]: namespace } };
  if (namespaceSelector && !ownControllerNamespace && JSON.stringify(namespaceSelector) !== JSON.stringify(config.networkPolicy.controller.namespaceSelector)) {
    const document = parseDocument(text);
    document.setIn(CONTROLLER_NAMESPACE, document.createNode(namespaceSelector));
    text = document.toString();
    config = { ...config, networkPolicy: { ...config.networkPolicy, controller: { ...config.networkPolicy.controller, namespaceSelector } } };
  }
  if (monitoring && !config.monitoring.enabled) {
    const document = parseDocument(text);
    document.setIn(MONITORING, true);
    text = document.toString();
    config = { ...config, monitoring: { ...config.monitoring, enabled: true } };
  }
  return { config, text };
}
