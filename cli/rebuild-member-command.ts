/**
 * `dkv rebuild-member`: the member side of a quorum-loss recovery
 * (engines/etcd/quorum-rebuild.ts), as the `recover` init container runs it
 * on every member pod before etcd starts. The recovery's order comes from
 * the environment (the recovery ConfigMap, when there is one).
 */
import { parseArgs } from 'node:util';
import pino from 'pino';
import { rebuildMember, recoveryOrderFrom, RECOVERY_ENV } from '../engines/etcd/quorum-rebuild.js';
import { createLogger } from '../kube/log.js';

export const REBUILD_MEMBER_USAGE = `usage: dkv rebuild-member --data-dir <dir> --name <member> --initial-cluster-token <token>
                          --initial-advertise-peer-urls <url> [--etcdutl <path>]
  Does nothing unless ${RECOVERY_ENV.pod} names this member and the member id in its data directory is
  ${RECOVERY_ENV.memberId}; then rewrites the data directory into a one-member cluster from the member's own
  database (etcdutl snapshot restore --skip-hash-check), once per ${RECOVERY_ENV.id}, keeping the old
  directory beside it. --etcdutl defaults to DKV_ETCDUTL, else etcdutl on the PATH.
Exit codes: 0 rebuilt or nothing to do, 1 failed (the reason on stderr), 2 usage.`;

const REQUIRED = ['data-dir', 'name', 'initial-cluster-token', 'initial-advertise-peer-urls'] as const;

export async function rebuildMemberCommand(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { ...Object.fromEntries(REQUIRED.map((name) => [name, { type: 'string' as const }])), etcdutl: { type: 'string' }, help: { type: 'boolean' } },
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(REBUILD_MEMBER_USAGE + '\n');
    return 0;
  }
  const given = values as Record<string, string | boolean | undefined>;
  const missing = REQUIRED.filter((name) => !given[name]);
  if (missing.length > 0) {
    process.stderr.write(`dkv rebuild-member: missing ${missing.map((m) => `--${m}`).join(', ')}\n${REBUILD_MEMBER_USAGE}\n`);
    return 2;
  }
  const option = (name: (typeof REQUIRED)[number]): string => given[name] as string;
  const log = createLogger(env.DKV_LOG_LEVEL ?? 'info', pino.destination(2), 'dkv-rebuild-member');
  try {
    const outcome = await rebuildMember({
      order: recoveryOrderFrom(env),
      dataDir: option('data-dir'), name: option('name'),
      initialClusterToken: option('initial-cluster-token'), initialAdvertisePeerUrls: option('initial-advertise-peer-urls'),
      etcdutl: values.etcdutl ?? env.DKV_ETCDUTL ?? 'etcdutl', log,
    });
    process.stdout.write(outcome.kind === 'rebuilt'
      ? `rebuilt ${option('name')} as a one-member cluster (token ${outcome.token}); its former data directory is kept at ${outcome.from}\n`
      : `nothing rebuilt: ${outcome.reason}\n`);
    return 0;
  } catch (e) {
    const reason = (e as Error).message;
    log.error('rebuild failed', { reason });
    process.stderr.write(`dkv rebuild-member: failed: ${reason}\n`);
    return 1;
  }
}
