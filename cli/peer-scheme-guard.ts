import type { Problem } from '../api/problem.js';
import { changesFromLastRun } from './last-run-changes.js';
import type { SpecDocument } from './read-specs.js';

/**
 * `dkv synth` refuses to switch a cluster's peer traffic between plain HTTP
 * and TLS in the manifests a GitOps repository applies. The controller keeps
 * the scheme a running cluster's members use whatever its spec says
 * (docs/security.md); `dkv synth` has no live cluster to read, but it has the
 * manifest it wrote last time, which is what runs. A changed scheme changes
 * every member's peer URL in one rollout: the members restarted first would
 * listen on a scheme the others do not speak, and the cluster would lose its
 * quorum. Moving one member at a time is the controller's migration
 * (engines/etcd/tls-migration.ts): it switches each member's peer URL
 * through the membership between two restarts, which no manifest can say,
 * so the message points there. Typically a spec written before TLS became
 * the default for a spec without `tls`: the message says to set
 * `spec.tls.mode: disabled` to keep plain HTTP.
 */
export function peerSchemeChanges(specs: readonly SpecDocument[], rendered: ReadonlyMap<string, string>, outDir: string): Problem[] {
  return changesFromLastRun(specs, rendered, outDir, peerScheme, (spec, path, running, next) => {
    const keep = running === 'http'
      ? 'set spec.tls.mode: disabled (or spec.tls.peer.enabled: false) to keep plain HTTP'
      : 'keep spec.tls as it was';
    return {
      file: spec.file, path: 'spec.tls', line: spec.line,
      message: `would move ${spec.resource.metadata.name}'s peer traffic from ${running} to ${next}, but ${path} runs it on ${running}: every member's peer URL would change in one rollout and the cluster would lose its quorum (a manifest cannot move members one at a time: the controller does, switching each member's peer URL through the membership between restarts, once the DistributedKV it reconciles says spec.tls.mode: operator; docs/security.md); ${keep}`,
    };
  });
}

/** The scheme of the members' peer listener in a manifest, if it has etcd members. */
function peerScheme(manifest: string | undefined): 'http' | 'https' | undefined {
  const match = manifest && /--listen-peer-urls=(https?):\/\//.exec(manifest);
  return match ? (match[1] as 'http' | 'https') : undefined;
}
