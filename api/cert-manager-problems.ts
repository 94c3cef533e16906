/**
 * What `spec.tls.mode: cert-manager` needs beyond the schema (docs/security.md,
 * "cert-manager"), checked by validateDistributedKV so that `dkv validate`,
 * `dkv synth` and the controller refuse the same specs before a Certificate
 * is written: the etcd engine (the generic engine's server is the user's
 * own), an issuer in the configuration (a Certificate without one is refused
 * by cert-manager, and the members would wait for Secrets nobody writes),
 * and a namespace (the members' certificate names their DNS names, which
 * contain it, and a Certificate cannot read it from the pod as the members'
 * arguments do), and a common name cert-manager's webhook accepts.
 */
import type { GeneratorConfig } from '../model/generator-config.js';
import { clusterIdentity } from '../model/cluster-identity.js';
import { memberCertificateRequest } from '../engines/etcd/certificate-requests.js';
import type { FieldProblem } from './schema-errors.js';

/** X.509's upper bound on a common name (RFC 5280, ub-common-name), which cert-manager's webhook enforces. */
const MAX_COMMON_NAME = 64;

/** The configuration file as a message names it. */
function configName(config: Pick<GeneratorConfig, 'file'>): string {
  return config.file && !config.file.endsWith('/dkv.config.yaml') ? config.file : 'the built-in configuration (dkv.config.yaml; pass --config <file>)';
}

export function certManagerProblems(doc: Record<string, any>, config: GeneratorConfig): FieldProblem[] {
  if (config.engine !== 'etcd') {
    return [{ segments: ['spec', 'tls', 'mode'], message: `the ${config.engine} engine has no TLS settings: its members run what its image serves; use disabled or leave spec.tls out` }];
  }
  const problems: FieldProblem[] = [];
  if (!config.tls.certManager.issuerRef.name) {
    problems.push({
      segments: ['spec', 'tls', 'mode'],
      message: `cert-manager needs the issuer that signs the members' certificates, and ${configName(config)} names none: set tls.certManager.issuerRef.name (and kind: Issuer or ClusterIssuer) there`,
    });
  }
  const namespace = doc.metadata?.namespace;
  if (typeof namespace !== 'string' || namespace === '') {
    problems.push({ segments: ['metadata', 'namespace'], message: 'required with spec.tls.mode cert-manager: the members\' certificate names their DNS names, which contain the namespace' });
  } else if (typeof doc.metadata?.name === 'string') {
    // cert-manager's webhook refuses a Certificate whose commonName is longer than X.509 allows.
    const commonName = memberCertificateRequest(clusterIdentity(doc.metadata.name, config), namespace, config).commonName;
    if (commonName.length > MAX_COMMON_NAME) {
      problems.push({ segments: ['metadata', 'name'], message: `with spec.tls.mode cert-manager, the members' certificate's common name ${JSON.stringify(commonName)} (<StatefulSet>.<namespace>) is ${commonName.length} characters, and cert-manager refuses more than ${MAX_COMMON_NAME}: choose a shorter name` });
    }
  }
  return problems;
}
