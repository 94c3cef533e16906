/**
 * Secrets exactly as cert-manager's CA issuer writes them for a Certificate
 * (cert-manager v1.21, pkg/controller/certificates/issuing/internal/secret.go):
 * type kubernetes.io/tls; data tls.crt (the leaf, then any intermediates),
 * tls.key (PKCS#8 here, as the generated Certificates ask), ca.crt (the CA
 * that issued it); the cert-manager.io/* annotations naming the
 * Certificate, its issuer and the names; the `controller.cert-manager.io/fao`
 * label and the labels of the Certificate's secretTemplate. For the tests
 * that stand in for cert-manager where its controller does not run: the
 * step that plays cert-manager's part writes these, from the generated
 * Certificate's own spec.
 */
import { createLeafCertificate, type KeyedCertificate } from '../../model/certificates.js';
import type { KubeObject } from '../../model/kube-object.js';
import { encodeSecretValue } from '../../engines/etcd/secret-data.js';

type CertificateObject = KubeObject & {
  spec: {
    secretName: string; commonName?: string; dnsNames?: string[]; ipAddresses?: string[]; usages?: string[];
    issuerRef: { name: string; kind?: string; group?: string }; secretTemplate?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  };
};

/** The decoded data and the metadata cert-manager gives the Secret of `certificate`, its leaf signed by `ca`. */
export async function certManagerSecret(
  certificate: KubeObject, ca: KeyedCertificate, options: { now?: Date; days?: number; namespace?: string } = {},
): Promise<{ metadata: { name: string; namespace?: string; labels: Record<string, string>; annotations: Record<string, string> }; type: 'kubernetes.io/tls'; data: Record<string, string> }> {
  const { spec, metadata } = certificate as CertificateObject;
  const leaf = await createLeafCertificate(ca, {
    commonName: spec.commonName ?? '', dnsNames: spec.dnsNames ?? [], ipAddresses: spec.ipAddresses ?? [],
    server: spec.usages?.includes('server auth') ?? false, client: spec.usages?.includes('client auth') ?? false,
  }, options.now ?? new Date(), options.days ?? 90);
  return {
    metadata: {
      name: spec.secretName,
      namespace: options.namespace ?? metadata.namespace,
      labels: { ...spec.secretTemplate?.labels, 'controller.cert-manager.io/fao': 'true' },
      annotations: {
        ...spec.secretTemplate?.annotations,
        'cert-manager.io/alt-names': (spec.dnsNames ?? []).join(','),
        'cert-manager.io/certificate-name': metadata.name,
        'cert-manager.io/common-name': spec.commonName ?? '',
        'cert-manager.io/ip-sans': (spec.ipAddresses ?? []).join(','),
        'cert-manager.io/issuer-group': spec.issuerRef.group ?? 'cert-manager.io',
        'cert-manager.io/issuer-kind': spec.issuerRef.kind ?? 'Issuer',
        'cert-manager.io/issuer-name': spec.issuerRef.name,
        'cert-manager.io/uri-sans': '',
      },
    },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': leaf.certificate, 'tls.key': leaf.privateKey, 'ca.crt': ca.certificate },
  };
}

/** The Secret as an API object (base64 data), to create on an API server or put in a cache. */
export function secretObject(secret: Awaited<ReturnType<typeof certManagerSecret>>): KubeObject & { type: string; data: Record<string, string> } {
  return {
    apiVersion: 'v1', kind: 'Secret', metadata: secret.metadata, type: secret.type,
    data: Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, encodeSecretValue(k, v)])),
  };
}
