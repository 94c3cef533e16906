import type { k8s } from 'cdk8s-plus-27';
import type { GeneratorConfig } from '../api/config.js';

/**
 * What every container running `dkv backup` or `dkv restore` gets, so that
 * it needs no configuration file: the generating configuration's S3
 * settings, and the credentials Secret the configuration names (never
 * credentials from the spec). The Secret is optional: with IRSA-style web
 * identity the pod's own identity is enough.
 */
export function s3RunnerEnvironment(config: GeneratorConfig): { env: k8s.EnvVar[]; envFrom: k8s.EnvFromSource[] } {
  const { s3 } = config.backup;
  return {
    env: [
      // An empty value is dropped by the API server (then never kept as generated): no endpoint, no variable.
      ...(s3.endpoint ? [{ name: 'DKV_S3_ENDPOINT', value: s3.endpoint }] : []),
      { name: 'DKV_S3_REGION', value: s3.region },
      { name: 'DKV_S3_FORCE_PATH_STYLE', value: String(s3.forcePathStyle) },
      { name: 'DKV_S3_PART_SIZE_MIB', value: String(s3.partSizeMiB) },
    ],
    envFrom: [{ secretRef: { name: config.backup.runner.credentialsSecret, optional: true } }],
  };
}
