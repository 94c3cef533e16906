import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

export interface ProbeOptions {
  /**
   * For https: the client certificate and CA to use, or `insecure` for a
   * component serving a self-signed certificate on a path every caller may
   * read (kube-scheduler's /healthz).
   */
  readonly tls?: { readonly ca: Buffer; readonly cert?: Buffer; readonly key?: Buffer } | 'insecure';
  /** @default 2000 */
  readonly timeoutMs?: number;
}

/** One GET of a health or metrics endpoint on loopback: its status and body. */
export function httpProbe(url: string, options: ProbeOptions = {}): Promise<{ status: number; body: string }> {
  const { tls, timeoutMs = 2000 } = options;
  const secure = url.startsWith('https:');
  const tlsOptions = !secure ? {} : tls === 'insecure' ? { rejectUnauthorized: false } : (tls ?? {});
  return new Promise((resolve, reject) => {
    const req = (secure ? httpsRequest : httpRequest)(url, { ...tlsOptions, timeout: timeoutMs, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}
