import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import type { ControllerIdentity } from './controller-identity.js';

export interface ControllerConfigMapProps {
  /** Its name, namespace and the file name it holds. */
  readonly identity: ControllerIdentity;
  /** The configuration file, as written (dkv.config.yaml or the one `dkv install --config` names). */
  readonly configText: string;
}

/**
 * The controller's configuration file, mounted into its pods and read with
 * --config. It is the file itself, comments and all, rather than the merged
 * result: the controller merges it over its built-in defaults exactly as
 * `dkv synth --config` does, so the CLI and the controller read one file the
 * same way.
 */
export class ControllerConfigMap extends Construct {
  readonly apiObject: k8s.KubeConfigMap;

  constructor(scope: Construct, id: string, props: ControllerConfigMapProps) {
    super(scope, id);
    const { identity, configText } = props;
    this.apiObject = new k8s.KubeConfigMap(this, 'Resource', {
      metadata: { name: identity.configMapName, namespace: identity.namespace, labels: { ...identity.labels } },
      data: { [identity.configFileName]: configText },
    });
  }
}
