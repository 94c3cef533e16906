import { Construct } from 'constructs';
import { ApiObject } from 'cdk8s';
import type { GeneratorConfig } from '../../api/config.js';
import { customResourceDefinition } from '../../api/crd.js';

export interface DistributedKVDefinitionProps {
  /** The configuration the controller runs with: it decides how long a cluster's name may be. */
  readonly config: GeneratorConfig;
  /** The namespace of the conversion webhook's Service: the controller's. */
  readonly webhookNamespace: string;
}

/**
 * The DistributedKV CustomResourceDefinition, exactly as `dkv synth` writes
 * it into dist/ (api/crd.ts derives both from the JSON Schema), so the API
 * server rejects what the controller would refuse before it is stored;
 * its conversion webhook is the controller's Service in the install's namespace.
 */
export class DistributedKVDefinition extends Construct {
  readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: DistributedKVDefinitionProps) {
    super(scope, id);
    const { apiVersion, kind, ...rest } = customResourceDefinition(props.config, { webhookNamespace: props.webhookNamespace }) as { apiVersion: string; kind: string; [key: string]: unknown };
    this.apiObject = new ApiObject(this, 'Resource', { apiVersion, kind, ...rest });
  }
}
