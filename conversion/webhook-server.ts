/**
 * The conversion webhook: the API server POSTs a ConversionReview
 * (apiextensions.k8s.io/v1) to /convert whenever a client asks for a
 * DistributedKV in a version other than the one it is stored in, and the
 * answer is convertDistributedKV (api/conversion.ts), the same function
 * `dkv synth` uses. Every controller replica serves it, leading or not: a
 * conversion writes nothing, and the API server must reach one whichever
 * leads. The certificate can be replaced while serving (rotation): new
 * connections get the new one.
 */
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { convertDistributedKV } from '../api/conversion.js';
import { servedVersionOf } from '../api/versions.js';
import type { Logger } from '../kube/log.js';
import type { KeyedCertificate } from '../model/certificates.js';

/** Refused above this: a review carries at most a list page of objects, and each is small. */
const MAX_BODY_BYTES = 32 * 1024 * 1024;
/**
 * The bodies held at once, across every review, and the reviews served at once: beyond either, a review is
 * refused (429) rather than buffered. A few parallel POSTs of 30 MiB each (parsed, several times their size)
 * would otherwise take a replica past its memory limit, and every replica serves the webhook: conversion and
 * reconciling would go down together. The API server's own reviews are a list page each, far under both, though
 * it sends many at once while a migration rewrites every object (a bound of 4 refused some of those).
 */
export const WEBHOOK_LIMITS = { maxInFlightBytes: 48 * 1024 * 1024, maxConcurrentReviews: 32 } as const;

interface ConversionReview {
  apiVersion?: string;
  kind?: string;
  request?: { uid?: string; desiredAPIVersion?: string; objects?: Record<string, unknown>[] };
}

/** The response to one ConversionReview: every object converted, or a failure naming the first that could not be. */
export function reviewResponse(review: ConversionReview): Record<string, unknown> {
  const request = review.request ?? {};
  const base = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview' };
  const fail = (message: string) => ({ ...base, response: { uid: request.uid ?? '', result: { status: 'Failure', message } } });
  if (review.kind !== 'ConversionReview' || typeof request.uid !== 'string') return fail('expected an apiextensions.k8s.io/v1 ConversionReview with request.uid');
  const desired = servedVersionOf(request.desiredAPIVersion);
  if (desired === undefined) return fail(`desiredAPIVersion ${JSON.stringify(request.desiredAPIVersion)} is not a version this controller serves`);
  const convertedObjects: Record<string, unknown>[] = [];
  for (const object of request.objects ?? []) {
    try {
      convertedObjects.push(convertDistributedKV(object, desired));
    } catch (e) {
      const meta = (object.metadata ?? {}) as { namespace?: string; name?: string };
      return fail(`${meta.namespace ?? ''}/${meta.name ?? ''}: ${(e as Error).message}`);
    }
  }
  return { ...base, response: { uid: request.uid, convertedObjects, result: { status: 'Success' } } };
}

export interface ConversionWebhookOptions {
  readonly host: string;
  /** 0: any free port (tests). */
  readonly port: number;
  readonly certificate: KeyedCertificate;
  readonly log: Logger;
  /** Called with each review's duration in seconds and whether it succeeded (the controller's metrics). */
  readonly observe?: (seconds: number, ok: boolean) => void;
}

export interface ConversionWebhook {
  readonly port: number;
  /** The most body bytes held at once so far, and how many reviews were refused for the limits. */
  load(): { readonly maxInFlightBytes: number; readonly refused: number };
  /** Serves `certificate` on every connection from now on. */
  setCertificate(certificate: KeyedCertificate): void;
  close(): Promise<void>;
}

export async function startConversionWebhook(options: ConversionWebhookOptions): Promise<ConversionWebhook> {
  const { log, observe } = options;
  let current = options.certificate;
  let inFlightBytes = 0;
  let maxInFlightBytes = 0;
  let reviews = 0;
  let refused = 0;
  const server: Server = createServer({ cert: current.certificate, key: current.privateKey }, (req, res) => {
    const started = performance.now();
    const answer = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
    };
    if (req.method !== 'POST' || req.url?.split('?')[0] !== '/convert') {
      answer(404, { message: 'POST a ConversionReview to /convert' });
      return;
    }
    // Refused with the connection closed after the answer, never cut: the API server's Go client reports a pooled
    // connection cut under it as "server closed idle connection" on its next review. What the caller still sends
    // is read and dropped (the data handler keeps nothing once the answer is out).
    const refuse = (message: string) => {
      refused++;
      res.setHeader('Retry-After', '1');
      res.setHeader('Connection', 'close');
      answer(429, { message });
    };
    if (reviews >= WEBHOOK_LIMITS.maxConcurrentReviews) {
      refuse(`${reviews} ConversionReviews are being served, the most at once`);
      return;
    }
    reviews++;
    const chunks: Buffer[] = [];
    let size = 0;
    // Every byte held is given back once, however the request ends (answered, refused, the connection gone).
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      inFlightBytes -= size;
      reviews--;
      chunks.length = 0;
    };
    res.once('close', release);
    req.on('data', (chunk: Buffer) => {
      if (res.headersSent) return;
      if (size + chunk.length > MAX_BODY_BYTES) {
        answer(413, { message: `a ConversionReview over ${MAX_BODY_BYTES} bytes` });
        req.destroy();
        return;
      }
      if (inFlightBytes + chunk.length > WEBHOOK_LIMITS.maxInFlightBytes) {
        refuse(`ConversionReviews of ${Math.round((inFlightBytes + chunk.length) / 1048576)} MiB at once, over ${WEBHOOK_LIMITS.maxInFlightBytes / 1048576} MiB`);
        return;
      }
      size += chunk.length;
      inFlightBytes += chunk.length;
      maxInFlightBytes = Math.max(maxInFlightBytes, inFlightBytes);
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (res.headersSent) return;
      let review: ConversionReview;
      try {
        review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ConversionReview;
      } catch {
        answer(400, { message: 'the body is not JSON' });
        observe?.((performance.now() - started) / 1000, false);
        return;
      }
      const response = reviewResponse(review);
      const ok = (response.response as { result: { status: string } }).result.status === 'Success';
      if (!ok) log.warn('conversion refused', { message: (response.response as { result: { message: string } }).result.message });
      answer(200, response);
      observe?.((performance.now() - started) / 1000, ok);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  log.info('serving the conversion webhook', { host: options.host, port });
  return {
    port,
    load: () => ({ maxInFlightBytes, refused }),
    setCertificate(certificate) {
      if (certificate.certificate === current.certificate) return;
      current = certificate;
      server.setSecureContext({ cert: certificate.certificate, key: certificate.privateKey });
      log.info('conversion webhook: serving a renewed certificate');
    },
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
