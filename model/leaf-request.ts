/**
 * What a leaf certificate says, apart from who signs it: the shape both the
 * controller's own PKI (model/certificates.ts) and cert-manager's
 * Certificates (constructs/certificates.ts) are made from, so the two
 * providers issue the same certificates. Free of any PKI library: the
 * construct library imports it.
 */
/** What a leaf certificate is for: the names it serves and whether it authenticates a server, a client or both. */
export interface LeafRequest {
  /** Empty: none (etcd's gateway refuses a client certificate with a common name once its authentication is on). */
  readonly commonName: string;
  /** The subject's organization, for a certificate that has no common name to say whose it is. */
  readonly organization?: string;
  readonly dnsNames: readonly string[];
  readonly ipAddresses: readonly string[];
  /** TLS server authentication (extKeyUsage serverAuth): it may serve for its names. */
  readonly server: boolean;
  /** TLS client authentication (extKeyUsage clientAuth): it may prove who dials (an etcd member dialling a peer is both). */
  readonly client: boolean;
}
