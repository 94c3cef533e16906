/**
 * The S3 settings (and retention) a runner's container gets from its
 * environment (constructs/backup-runner.ts writes them), laid over the
 * configuration: the same image serves every cluster, whatever
 * configuration generated it.
 */
import type { GeneratorConfig } from '../model/generator-config.js';

/** The configuration with the S3 settings, retention and volume snapshot class the environment gives (the CronJob's), or why they are unusable. */
export function withEnvironment(config: GeneratorConfig, env: NodeJS.ProcessEnv): GeneratorConfig | string {
  const number = (name: string, min: number, max: number): number | string | undefined => {
    const value = env[name];
    if (value === undefined || value === '') return undefined;
    const n = Number(value);
    return Number.isInteger(n) && n >= min && n <= max ? n : `${name}=${value}: expected an integer from ${min} to ${max}`;
  };
  const retain = number('DKV_BACKUP_RETAIN', 1, 1000);
  const readyTimeoutSeconds = number('DKV_VOLUME_SNAPSHOT_READY_TIMEOUT_SECONDS', 10, 86400);
  if (typeof readyTimeoutSeconds === 'string') return readyTimeoutSeconds;
  const partSizeMiB = number('DKV_S3_PART_SIZE_MIB', 5, 5120);
  for (const bad of [retain, partSizeMiB]) if (typeof bad === 'string') return bad;
  const pathStyle = env.DKV_S3_FORCE_PATH_STYLE;
  if (pathStyle !== undefined && pathStyle !== '' && pathStyle !== 'true' && pathStyle !== 'false') return `DKV_S3_FORCE_PATH_STYLE=${pathStyle}: expected true or false`;
  const { s3, volumeSnapshots } = config.backup;
  return {
    ...config,
    backup: {
      ...config.backup,
      retain: (retain as number | undefined) ?? config.backup.retain,
      volumeSnapshots: {
        ...volumeSnapshots,
        className: env.DKV_VOLUME_SNAPSHOT_CLASS ?? volumeSnapshots.className,
        readyTimeoutSeconds: readyTimeoutSeconds ?? volumeSnapshots.readyTimeoutSeconds,
      },
      s3: {
        endpoint: env.DKV_S3_ENDPOINT ?? s3.endpoint,
        region: env.DKV_S3_REGION || s3.region,
        forcePathStyle: pathStyle === undefined || pathStyle === '' ? s3.forcePathStyle : pathStyle === 'true',
        partSizeMiB: (partSizeMiB as number | undefined) ?? s3.partSizeMiB,
      },
    },
  };
}
