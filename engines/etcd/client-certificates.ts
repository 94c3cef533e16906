/**
 * What a client identity's Secret holds (spec.clients,
 * docs/client-identities.md), in the shape cert-manager writes (tls.crt,
 * tls.key, ca.crt).
 *
 * A client's certificate names the client as its common name: that is its
 * etcd user (--client-cert-auth makes etcd read it on the gRPC API). The
 * root identity's certificate has no common name at all (an organization
 * only): etcd's JSON gateway, which the controller and the backup runner
 * speak, refuses a certificate with one once authentication is on; that
 * identity authenticates with root's password (`username`, `password`)
 * instead (etcd-auth.ts).
 */
import { randomBytes } from 'node:crypto';
import type { LeafRequest } from '../../model/certificates.js';

/** A client's certificate: its name is its etcd user; it authenticates a client and serves nothing. */
export const clientCertificateRequest = (client: string): LeafRequest => ({ commonName: client, dnsNames: [], ipAddresses: [], server: false, client: true });

/** The root identity's certificate: no common name (the gateway refuses one once authentication is on). */
export const ROOT_CERTIFICATE_REQUEST: LeafRequest = { commonName: '', organization: 'dkv-operator', dnsNames: [], ipAddresses: [], server: false, client: true };

/** A new password for root: 32 random bytes, as URL-safe base64. */
export const newRootPassword = (): string => randomBytes(32).toString('base64url');

