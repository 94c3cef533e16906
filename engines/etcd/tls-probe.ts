/**
 * One look at a member's client listener over a new TLS connection (never a
 * pooled one: etcd decides what it serves and whom it accepts at each
 * handshake, so only a new connection shows what it does now): whether a
 * request with this client certificate was answered, and which certificate
 * the member served. What the issuing-CA rotation observes
 * (certificate-rotation.ts).
 */
import { request } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { EtcdClientTls } from './etcd-http.js';

export interface TlsProbeResult {
  /** The member answered the request (any HTTP status): it accepted the certificate. */
  readonly answered: boolean;
  /** The SHA-256 fingerprint of the certificate the member served, when the handshake got that far. */
  readonly servedFingerprint?: string;
  readonly error?: string;
}

export type TlsProbe = (clientUrl: string, tls: EtcdClientTls) => Promise<TlsProbeResult>;

/** GET /version at `clientUrl` with `tls`, over a connection of its own. */
export function probeMember(clientUrl: string, tls: EtcdClientTls, timeoutMs: number): Promise<TlsProbeResult> {
  return new Promise((resolve) => {
    let servedFingerprint: string | undefined;
    const req = request(`${clientUrl}/version`, { agent: false, ca: tls.ca, cert: tls.cert, key: tls.key, signal: AbortSignal.timeout(timeoutMs) }, (res) => {
      res.resume();
      res.on('end', () => resolve({ answered: true, servedFingerprint }));
      res.on('error', (e) => resolve({ answered: false, servedFingerprint, error: e.message }));
    });
    req.on('socket', (socket) => socket.once('secureConnect', () => {
      servedFingerprint = (socket as TLSSocket).getPeerCertificate().fingerprint256;
    }));
    req.on('error', (e) => resolve({ answered: false, servedFingerprint, error: e.message }));
    req.end();
  });
}
