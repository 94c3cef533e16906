import type { Problem } from '../api/problem.js';
import { changesFromLastRun } from './last-run-changes.js';
import type { SpecDocument } from './read-specs.js';

/**
 * `dkv synth` refuses to move a TLS cluster between certificate providers
 * (the controller's own CA, mode `operator`, and cert-manager's issuer, mode
 * `cert-manager`) in the manifests a GitOps repository applies, as the
 * controller refuses it for the DistributedKV it reconciles
 * (reconciler/day2/tls-provider-change.ts): etcd reads the CA it trusts only
 * when it starts, so once cert-manager writes leaves of its issuer into the
 * Secrets the running members mount (or the controller writes its own into
 * cert-manager's), every connection between them fails. The manifest written
 * last time says which provider runs: cert-manager's Certificates, or the
 * members' CRL flags, which only the operator mode renders.
 */
export function tlsProviderChanges(specs: readonly SpecDocument[], rendered: ReadonlyMap<string, string>, outDir: string): Problem[] {
  return changesFromLastRun(specs, rendered, outDir, provider, (spec, path, running, next) => ({
    file: spec.file, path: 'spec.tls.mode', line: spec.line,
    message: `would move ${spec.resource.metadata.name}'s certificates from ${describe(running)} to ${describe(next)}, but ${path} runs them from ${describe(running)}: the members trust the CA they started with, and the new leaves would lock them out of each other (switching a running cluster's certificate provider is not built: docs/security.md, "cert-manager"); keep spec.tls.mode: ${running}`,
  }));
}

const describe = (p: 'operator' | 'cert-manager'): string => (p === 'operator' ? 'the controller\'s CA (mode operator)' : 'cert-manager (mode cert-manager)');

/** Who issues a manifest's members' certificates, where it says: cert-manager's Certificates, or the CRL flags of the operator mode. */
function provider(manifest: string | undefined): 'operator' | 'cert-manager' | undefined {
  if (!manifest) return undefined;
  if (/^apiVersion: cert-manager\.io\/v1$/m.test(manifest)) return 'cert-manager';
  if (/--(client|peer)-crl-file=/.test(manifest)) return 'operator';
  return undefined;
}
