import { Construct } from 'constructs';
import {
  Certificate, CertificateSpecPrivateKeyAlgorithm, CertificateSpecPrivateKeyEncoding, CertificateSpecPrivateKeyRotationPolicy, CertificateSpecUsages,
} from '../imports/cert-manager.io.js';
import type { GeneratorConfig } from '../api/config.js';
import type { ClusterIdentity } from '../model/cluster-identity.js';
import type { LeafRequest } from '../model/leaf-request.js';
import { CLIENT_CERTIFICATE_REQUEST, memberCertificateRequest } from '../engines/etcd/certificate-requests.js';
import { tlsSecretNames } from '../engines/etcd/tls-files.js';

export interface KVCertificatesProps {
  /** Name, labels and the Services' names shared by every object of the cluster. */
  readonly identity: ClusterIdentity;
  /** The cluster's namespace: the members' DNS names contain it. */
  readonly namespace: string;
  /** The Secrets' names (tls), validity and renewal, the issuer (tls.certManager), the cluster domain. */
  readonly config: Pick<GeneratorConfig, 'tls' | 'clusterDomain'>;
}

/**
 * The share of a certificate's lifetime left when cert-manager renews it:
 * the configuration's renewalFraction (the operator mode's, two thirds by
 * default) as cert-manager's renewBeforePercentage, an integer in (0, 100).
 */
export function renewBeforePercentage(renewalFraction: number): number {
  return Math.min(99, Math.max(1, Math.round((1 - renewalFraction) * 100)));
}

/**
 * The cert-manager Certificates of a cluster whose spec says `tls.mode:
 * cert-manager` (docs/security.md, "cert-manager"): cert-manager, not the
 * controller, issues the members' certificate and the client certificate
 * (of the controller, the backup runner and the restore) into the Secrets
 * the operator mode's controller would issue, same names, same keys
 * (`tls.crt`, `tls.key`, `ca.crt`), so the StatefulSet and the backup
 * CronJob mount them unchanged. Each asks for exactly what the operator
 * mode's leaf of the same name carries (engines/etcd/certificates.ts): the
 * members' certificate every name a member is reached by, server and client
 * usage; the client certificate client usage only, common name
 * `dkv-operator`. The key is made by cert-manager in the cluster and never
 * leaves its Secret: `dkv synth` output holds no private key.
 *
 * The Secrets carry the cluster's labels (secretTemplate): the controller
 * caches only Secrets with them, and maps a Secret to its cluster by them.
 * Renewal is cert-manager's: each Certificate is valid
 * `tls.certificateValidityDays` and renewed once `tls.renewalFraction` of
 * it has passed (renewBeforePercentage); the members read a renewed leaf on
 * their next handshake, as in the operator mode.
 */
export class KVCertificates extends Construct {
  readonly member: Certificate;
  readonly client: Certificate;

  constructor(scope: Construct, id: string, props: KVCertificatesProps) {
    super(scope, id);
    const { identity, namespace, config } = props;
    const names = tlsSecretNames(config, identity);
    this.member = this.certificate('Member', names.member, memberCertificateRequest(identity, namespace, config), props);
    this.client = this.certificate('Client', names.client, CLIENT_CERTIFICATE_REQUEST, props);
  }

  private certificate(id: string, secretName: string, request: LeafRequest, props: KVCertificatesProps): Certificate {
    const { identity, config } = props;
    const { issuerRef } = config.tls.certManager;
    return new Certificate(this, id, {
      metadata: { name: secretName, labels: { ...identity.serverLabels }, annotations: identity.annotations },
      spec: {
        secretName,
        secretTemplate: { labels: { ...identity.serverLabels } },
        issuerRef: { name: issuerRef.name, kind: issuerRef.kind, group: issuerRef.group },
        ...(request.commonName ? { commonName: request.commonName } : {}),
        ...(request.dnsNames.length > 0 ? { dnsNames: [...request.dnsNames] } : {}),
        ...(request.ipAddresses.length > 0 ? { ipAddresses: [...request.ipAddresses] } : {}),
        usages: [
          CertificateSpecUsages.DIGITAL_SIGNATURE, CertificateSpecUsages.KEY_ENCIPHERMENT,
          ...(request.server ? [CertificateSpecUsages.SERVER_AUTH] : []),
          ...(request.client ? [CertificateSpecUsages.CLIENT_AUTH] : []),
        ],
        duration: `${config.tls.certificateValidityDays * 24}h`,
        renewBeforePercentage: renewBeforePercentage(config.tls.renewalFraction),
        // PKCS#8 RSA 2048, the keys the operator mode makes; a new key at every renewal.
        privateKey: {
          algorithm: CertificateSpecPrivateKeyAlgorithm.RSA, size: 2048,
          encoding: CertificateSpecPrivateKeyEncoding.PKCS8, rotationPolicy: CertificateSpecPrivateKeyRotationPolicy.ALWAYS,
        },
      },
    });
  }
}
