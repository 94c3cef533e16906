/**
 * Which moves between certificate providers a running cluster may make
 * (docs/security.md, "cert-manager"): none yet. etcd reads the CA it trusts
 * only when it starts, so a running cluster that moved from the controller's
 * CA to cert-manager's issuer (or back) would have its Secrets rewritten
 * with leaves of a CA its members do not trust, and lose every connection
 * at once; and a plain-HTTP cluster is moved to TLS member by member by the
 * migration, which issues the controller's own certificates only. So the
 * controller refuses such a spec before writing anything, naming the field;
 * a new cluster (no StatefulSet) may start with either provider.
 */
import type { CachedObject } from '../../kube/informer.js';
import type { TlsMode } from '../../model/tls.js';
import { liveTlsOf } from '../../engines/etcd/tls-files.js';

/** The annotation cert-manager writes on every Secret it issues. */
export const CERT_MANAGER_CERTIFICATE_ANNOTATION = 'cert-manager.io/certificate-name';

export interface TlsProviderInput {
  /** spec.tls.mode as written (undefined: the default, operator for a new cluster). */
  readonly asked: TlsMode | undefined;
  /** The cluster's own StatefulSet, from the cache: undefined for a new cluster. */
  readonly statefulSet?: CachedObject;
  /** The cluster's CA Secret of mode operator exists (the controller issued this cluster's certificates). */
  readonly operatorAuthority: boolean;
  /** The members' Secret as cached, whoever wrote it. */
  readonly memberSecret?: CachedObject;
}

const CRL_FLAGS = ['--client-crl-file=', '--peer-crl-file='];

/** Why the spec's provider cannot be taken by the running members, naming spec.tls.mode; undefined when it can. */
export function tlsProviderChangeRefusal(input: TlsProviderInput): string | undefined {
  const live = liveTlsOf(input.statefulSet);
  if (!input.statefulSet || !live) return undefined;
  const args = (input.statefulSet.spec as { template?: { spec?: { containers?: { args?: string[] }[] } } } | undefined)?.template?.spec?.containers?.[0]?.args ?? [];
  const byCertManager = input.memberSecret?.metadata.annotations?.[CERT_MANAGER_CERTIFICATE_ANNOTATION] !== undefined;
  const byController = input.operatorAuthority || args.some((a) => CRL_FLAGS.some((f) => a.startsWith(f)));
  if (input.asked === 'cert-manager') {
    if (!live.peer && !live.client) {
      return 'spec.tls.mode: cert-manager: the running members serve plain HTTP, and moving a running cluster to TLS with cert-manager\'s certificates is not built; set mode operator to migrate it member by member (the controller issues its certificates), or disabled to keep plain HTTP (docs/security.md, "cert-manager")';
    }
    if (byController && !byCertManager) {
      return 'spec.tls.mode: cert-manager: the running members trust the CA the controller issued (mode operator), and etcd reads the CA it trusts only when it starts: switching a running cluster to cert-manager\'s issuer is not built; keep mode operator (docs/security.md, "cert-manager")';
    }
    return undefined;
  }
  if (byCertManager && (live.peer || live.client)) {
    return `spec.tls.mode: ${input.asked ?? 'operator (the default)'}: the running members use certificates cert-manager issues (mode cert-manager), and switching a running cluster to ${input.asked === 'disabled' ? 'plain HTTP' : 'the controller\'s own CA'} is not built; keep mode cert-manager (docs/security.md, "cert-manager")`;
  }
  return undefined;
}
