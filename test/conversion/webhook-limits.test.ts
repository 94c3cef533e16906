/**
 * The conversion webhook under a flood (conversion/webhook-server.ts): every
 * controller replica serves it, so bodies buffered without a bound would take
 * conversion and reconciling down together. Eight parallel POSTs of 30 MiB
 * each (240 MiB against a replica's 384 MiB limit) are refused beyond the
 * bytes and reviews allowed at once, and a real review is converted right
 * after. The server is the controller's own, started in this process.
 */
import { request } from 'node:https';
import { createCertificateAuthority, createServingCertificate } from '../../model/certificates.js';
import { startConversionWebhook, WEBHOOK_LIMITS, type ConversionWebhook } from '../../conversion/webhook-server.js';
import { createLogger } from '../../kube/log.js';

const MiB = 1024 * 1024;

describe('the conversion webhook under parallel oversized reviews', () => {
  let webhook: ConversionWebhook;
  let ca: string;
  beforeAll(async () => {
    const authority = await createCertificateAuthority('webhook-test-ca', new Date(), 1);
    ca = authority.certificate;
    const serving = await createServingCertificate(authority, { dnsNames: [], ipAddresses: ['127.0.0.1'] }, new Date(), 1);
    webhook = await startConversionWebhook({ host: '127.0.0.1', port: 0, certificate: serving, log: createLogger('silent') });
  }, 30_000);
  afterAll(() => webhook?.close());

  /** One POST of `body` to /convert: its status, or the error when the server cut the connection. */
  const post = (body: Buffer) => new Promise<number | string>((resolve) => {
    const req = request({ host: '127.0.0.1', port: webhook.port, path: '/convert', method: 'POST', ca, headers: { 'Content-Type': 'application/json', 'Content-Length': body.length } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', (e) => resolve(e.message));
    });
    req.on('error', (e) => resolve(e.message));
    req.end(body);
  });

  it('holds no more than its bound of body bytes at once, refuses the rest, and converts a real review right after', async () => {
    // 30 MiB of one JSON string: under the 32 MiB a single review may be, so only the limits across reviews refuse it.
    const big = Buffer.concat([Buffer.from('{"kind":"ConversionReview","padding":"'), Buffer.alloc(30 * MiB - 60, 'x'), Buffer.from('"}')]);
    const outcomes = await Promise.all(Array.from({ length: 8 }, () => post(big)));
    const { maxInFlightBytes, refused } = webhook.load();
    expect(maxInFlightBytes).toBeLessThanOrEqual(WEBHOOK_LIMITS.maxInFlightBytes);
    // At most one 30 MiB body fits under 48 MiB at a time: the others were refused with 429, each answered, none cut off.
    expect(refused).toBeGreaterThanOrEqual(6);
    expect(outcomes.filter((o) => o === 429).length).toBeGreaterThanOrEqual(6);
    // What was let in was read whole and answered (a review without a request: refused in words, not dropped).
    expect(outcomes.filter((o) => o === 200).length + outcomes.filter((o) => o === 429).length).toBe(8);

    const review = {
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview',
      request: {
        uid: 'after-the-flood', desiredAPIVersion: 'example.com/v1alpha1',
        objects: [{ apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'kv', namespace: 'shop' }, spec: { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0' } }],
      },
    };
    const answer = await new Promise<any>((resolve, reject) => {
      const body = Buffer.from(JSON.stringify(review));
      const req = request({ host: '127.0.0.1', port: webhook.port, path: '/convert', method: 'POST', ca, headers: { 'Content-Type': 'application/json', 'Content-Length': body.length } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
      });
      req.on('error', reject);
      req.end(body);
    });
    expect(answer.response).toMatchObject({ uid: 'after-the-flood', result: { status: 'Success' } });
    expect(answer.response.convertedObjects[0].apiVersion).toBe('example.com/v1alpha1');
  }, 60_000);
});
