/**
 * Keeps the conversion webhook's certificate and the CRD's trust in it
 * correct, with no cert-manager: the CA and serving certificate live in one
 * Secret of the controller's namespace, every replica serves what it holds,
 * and the CA bundle goes into the CRD's
 * spec.conversion.webhook.clientConfig.caBundle (open-policy-agent's
 * cert-controller does the same for Gatekeeper).
 *
 * Each sync takes at most one step and writes with resourceVersion
 * preconditions, so replicas that sync at once cannot undo each other (the
 * loser's write conflicts and it re-reads), and a controller killed between
 * steps resumes from what is stored:
 *   1. no CA, or less than a third of its life left → a new CA, trusted
 *      beside the old one (until that expires): the Secret's ca.crt is the
 *      bundle, newest first;
 *   2. the CRD's caBundle differs from that bundle → the CRD is patched;
 *   3. only then, a serving certificate missing, near its end, for other
 *      names, or not from the current CA → a new one from the current CA.
 * So the API server trusts a CA before any replica serves a certificate
 * from it, and a rotation never fails a conversion. A settle that injected
 * a bundle stops there while a certificate is being served: the next one
 * (a refresh period later) renews the serving certificate, by when the API
 * server has long picked up the CRD's new bundle.
 *
 * Where the CRD carries cert-manager's CA-injector annotation, cert-manager
 * issues the certificate and injects the bundle: the controller only serves
 * the certificate it finds in the Secret, and writes nothing.
 */
import { CRD_NAME, CRD_PATH } from '../api/crd.js';
import type { GeneratorConfig } from '../api/config.js';
import type { Clock } from '../kube/clock.js';
import { KubeApiError, type KubeClient } from '../kube/client.js';
import type { Logger } from '../kube/log.js';
import {
  createCertificateAuthority, createServingCertificate, freshEnough, servesFor, splitBundle, unexpired, type KeyedCertificate,
} from '../model/certificates.js';

export const CERT_MANAGER_INJECT_ANNOTATION = 'cert-manager.io/inject-ca-from';

/** Renewed when less than this share of a certificate's validity is left. */
const RENEW_FRACTION = 1 / 3;


/** The names the serving certificate must carry. */
export interface ServingNames {
  readonly dnsNames: readonly string[];
  readonly ipAddresses: readonly string[];
}

/** What the API server dials: the configured URL's host, or every name of the webhook Service. */
export function servingNames(config: GeneratorConfig, namespace: string): ServingNames {
  const { url, serviceName } = config.conversion;
  if (url) {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    return /^[0-9.]+$|:/.test(host) ? { dnsNames: [], ipAddresses: [host] } : { dnsNames: [host], ipAddresses: [] };
  }
  const svc = `${serviceName}.${namespace}.svc`;
  return { dnsNames: [svc, serviceName, `${serviceName}.${namespace}`, `${svc}.${config.clusterDomain}`], ipAddresses: [] };
}

/** What a sync did: the step taken, or what it found. */
export type RotationStep = 'ca-created' | 'ca-renewed' | 'ca-bundle-injected' | 'serving-renewed' | 'expired-ca-dropped' | 'in-order' | 'cert-manager';

interface StoredSecret {
  readonly resourceVersion?: string;
  readonly caBundle: string[];
  readonly caKey?: string;
  readonly serving?: KeyedCertificate;
}

export interface CertificateRotationOptions {
  readonly client: KubeClient;
  readonly config: GeneratorConfig;
  /** The controller's namespace: the Secret's, and the Service's when the CRD names one. */
  readonly namespace: string;
  readonly clock: Clock;
  readonly log: Logger;
}

function decode(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? Buffer.from(value, 'base64').toString('utf8') : undefined;
}

function encode(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

/**
 * The controller's namespace, where the certificate Secret must live, does
 * not exist: the install bundle was not applied there, or the controller
 * runs outside the cluster (a laptop) for a namespace of its own. Only a
 * person fixes that, so it is said once and looked at again slowly.
 */
export class MissingNamespaceError extends Error {
  constructor(readonly namespace: string, readonly secret: string) {
    super(`conversion webhook: namespace ${JSON.stringify(namespace)} does not exist, so its certificate Secret ${namespace}/${secret} cannot be created: `
      + `apply the install bundle (dkv install) or create the namespace, or run without the conversion webhook: dkv controller --webhook-addr off`);
    this.name = 'MissingNamespaceError';
  }
}

/** A 404 on a create in a namespace is the namespace's own, not the object's (which is not there yet either way). */
function isMissingNamespace(e: unknown, namespace: string): boolean {
  const details = e instanceof KubeApiError ? (e.body as { details?: { kind?: string; name?: string } } | undefined)?.details : undefined;
  return e instanceof KubeApiError && e.status === 404 && details?.kind === 'namespaces' && details.name === namespace;
}

export class CertificateRotation {
  constructor(private readonly options: CertificateRotationOptions) {}

  private get secretPath(): string {
    return `/api/v1/namespaces/${encodeURIComponent(this.options.namespace)}/secrets/${encodeURIComponent(this.options.config.conversion.certificateSecret)}`;
  }

  private async readSecret(): Promise<StoredSecret | undefined> {
    try {
      const secret = await this.options.client.request('GET', this.secretPath);
      const data = secret.data ?? {};
      const cert = decode(data['tls.crt']);
      const key = decode(data['tls.key']);
      return {
        resourceVersion: secret.metadata?.resourceVersion,
        caBundle: splitBundle(decode(data['ca.crt']) ?? ''),
        caKey: decode(data['ca.key']),
        serving: cert && key ? { certificate: cert, privateKey: key } : undefined,
      };
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) return undefined;
      throw e;
    }
  }

  private async writeSecret(previous: StoredSecret | undefined, next: Omit<StoredSecret, 'resourceVersion'>): Promise<void> {
    const { client, config, namespace } = this.options;
    const data: Record<string, string> = { 'ca.crt': encode(next.caBundle.join('')) };
    if (next.caKey) data['ca.key'] = encode(next.caKey);
    if (next.serving) {
      data['tls.crt'] = encode(next.serving.certificate);
      data['tls.key'] = encode(next.serving.privateKey);
    }
    const body = {
      apiVersion: 'v1', kind: 'Secret', type: 'Opaque',
      metadata: {
        name: config.conversion.certificateSecret, namespace,
        labels: { 'app.kubernetes.io/part-of': 'distributedkv', 'app.kubernetes.io/component': 'conversion-webhook' },
        ...(previous?.resourceVersion ? { resourceVersion: previous.resourceVersion } : {}),
      },
      data,
    };
    if (previous) await client.request('PUT', this.secretPath, { body });
    else {
      try {
        await client.request('POST', `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`, { body });
      } catch (e) {
        if (isMissingNamespace(e, namespace)) throw new MissingNamespaceError(namespace, config.conversion.certificateSecret);
        throw e;
      }
    }
  }

  /**
   * One step towards a correct certificate and CA bundle (see the file's
   * comment). Returns the step, and the certificate to serve once there is one.
   * Throws on a conflict with another replica's write: the next sync re-reads.
   */
  async sync(): Promise<{ step: RotationStep; serving?: KeyedCertificate }> {
    const { client, config, namespace, clock } = this.options;
    const crd = await client.request('GET', CRD_PATH);
    if (crd.metadata?.annotations?.[CERT_MANAGER_INJECT_ANNOTATION]) {
      const stored = await this.readSecret();
      return { step: 'cert-manager', serving: stored?.serving };
    }
    const now = new Date(clock.now());
    const { caValidityDays, certificateValidityDays } = config.conversion;
    const stored = await this.readSecret();
    const bundle = stored?.caBundle ?? [];
    const currentCa = bundle[0];

    // 1. A CA with life left.
    if (!stored || !currentCa || !stored.caKey || !freshEnough(currentCa, now, RENEW_FRACTION)) {
      const ca = await createCertificateAuthority(`dkv-conversion-webhook-ca-${Math.floor(now.getTime() / 1000)}`, now, caValidityDays);
      const trusted = [ca.certificate, ...bundle.filter((pem) => unexpired(pem, now))];
      await this.writeSecret(stored, { caBundle: trusted, caKey: ca.privateKey, serving: stored?.serving });
      return { step: currentCa ? 'ca-renewed' : 'ca-created', serving: stored?.serving };
    }
    const live = bundle.filter((pem) => unexpired(pem, now));
    if (live.length !== bundle.length) {
      await this.writeSecret(stored, { caBundle: live, caKey: stored.caKey, serving: stored.serving });
      return { step: 'expired-ca-dropped', serving: stored.serving };
    }

    // 2. The API server trusts every CA in the bundle.
    const wanted = encode(bundle.join(''));
    const clientConfig = crd.spec?.conversion?.webhook?.clientConfig;
    if (!clientConfig) throw new Error(`${CRD_NAME} has no conversion webhook (spec.conversion.webhook.clientConfig): install the CRD dkv install writes`);
    if (clientConfig.caBundle !== wanted) {
      await client.request('PATCH', CRD_PATH, {
        contentType: 'application/json-patch+json',
        body: [
          { op: 'test', path: '/metadata/resourceVersion', value: crd.metadata.resourceVersion },
          { op: 'add', path: '/spec/conversion/webhook/clientConfig/caBundle', value: wanted },
        ],
      });
      return { step: 'ca-bundle-injected', serving: stored.serving };
    }

    // 3. A serving certificate from the current CA, for the names the API server dials.
    const names = servingNames(config, namespace);
    const serving = stored.serving;
    if (!serving || !freshEnough(serving.certificate, now, RENEW_FRACTION) || !servesFor(serving.certificate, currentCa, names)) {
      const renewed = await createServingCertificate({ certificate: currentCa, privateKey: stored.caKey }, names, now, certificateValidityDays);
      await this.writeSecret(stored, { caBundle: bundle, caKey: stored.caKey, serving: renewed });
      return { step: 'serving-renewed', serving: renewed };
    }
    return { step: 'in-order', serving };
  }

  /**
   * Syncs until a sync finds everything in order (a handful of steps), or
   * until a new bundle was injected while a certificate is served (see the
   * file's comment), and returns what to serve and the steps taken.
   */
  async settle(maxSteps = 8): Promise<{ serving: KeyedCertificate; steps: RotationStep[] }> {
    const steps: RotationStep[] = [];
    let lastConflict = '';
    for (let i = 0; i < maxSteps; i++) {
      let result: Awaited<ReturnType<CertificateRotation['sync']>>;
      try {
        result = await this.sync();
      } catch (e) {
        if (e instanceof KubeApiError && (e.status === 409 || e.status === 422)) {
          lastConflict = e.message;
          this.options.log.debug('conversion webhook certificate: conflict, re-reading', { error: e.message });
          continue; // another replica wrote first (a failed JSON-patch test is 422): re-read
        }
        throw e;
      }
      steps.push(result.step);
      if (result.step !== 'in-order') this.options.log.info('conversion webhook certificate', { step: result.step });
      const done = result.step === 'in-order' || result.step === 'cert-manager' || (result.step === 'ca-bundle-injected' && result.serving !== undefined);
      if (done && result.serving) return { serving: result.serving, steps };
      if (result.step === 'cert-manager') throw new Error(`cert-manager has not issued the Secret ${this.options.namespace}/${this.options.config.conversion.certificateSecret} (tls.crt, tls.key) yet`);
    }
    throw new Error(`conversion webhook certificate: not settled after ${maxSteps} steps${lastConflict ? ` (last refused: ${lastConflict})` : ''}`);
  }
}
