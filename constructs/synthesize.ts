import { App, Chart } from 'cdk8s';
import type { GeneratorConfig } from '../api/config.js';
import type { ValidResource } from '../api/validate.js';
import { DistributedKVCluster } from './distributed-kv.js';
import { withDesiredHash, type KubeObject } from './hash.js';

/**
 * A cdk8s Chart for one DistributedKV whose objects carry their desired-hash
 * annotation. `cdk8s synth`, `dkv synth` and the controller all render
 * through it, so there is one place that knows what a DistributedKV turns into.
 */
export class DistributedKVChart extends Chart {
  constructor(scope: App, id: string, readonly resource: ValidResource, readonly config: GeneratorConfig) {
    super(scope, id, { namespace: resource.metadata.namespace, disableResourceNameHashes: true });
    new DistributedKVCluster(this, 'Cluster', { name: resource.metadata.name, spec: resource.spec, config });
  }

  override toJson(): any[] {
    return super.toJson().map((o: KubeObject) => withDesiredHash(o, this.config.hashAnnotation));
  }
}

/**
 * The desired objects of one DistributedKV, in a stable order, each with its
 * desired-hash annotation. The single synthesis function shared by the CLI
 * and the controller.
 */
export function synthesizeCluster(resource: ValidResource, config: GeneratorConfig): KubeObject[] {
  const app = new App({ outdir: '.' });
  return new DistributedKVChart(app, resource.metadata.name, resource, config).toJson();
}
