/**
 * The names of the objects of each owned kind that the owned caches do not
 * hold, so that a new cluster's objects are created without reading each
 * one from the API server first.
 *
 * The owned caches hold only objects with the generated labels (selector
 * `a=x,b=y`), but an object of a generated name may exist without them: an
 * application's Service, or this cluster's own objects under an earlier
 * label configuration. Every object missing from the cache used to be read
 * (GET) before its first write: 4.5 reads per new cluster, as many requests
 * as the writes themselves. Instead, per owned kind, metadata-only informers
 * over the complement of the selector (`a!=x`, then `a=x,b!=y`: together,
 * every object the owned cache does not select) keep those objects' names
 * and nothing else. A name in neither cache does not exist; only a name
 * found here is read, to decide whose object it is (ownership.ts).
 *
 * What it costs: one watch per kind and selector term, carrying only the
 * metadata of objects that are not ours (often none), and a name per such
 * object. Single-leader mode only: a shard's owned caches hold its own
 * buckets, so another shard's objects are in neither cache; shards read.
 *
 * As current as its watches, as the read was as current as the API server's
 * watch cache (resourceVersion 0): an object created between the look and
 * the write is missed either way, and nothing makes the two one step.
 */
import { Informer, objectKey, type CachedObject, type InformerOptions } from '../kube/informer.js';
import { resourcePath, type KubeClient } from '../kube/client.js';

/**
 * Selectors that together select every object `selector` does not, each
 * object once: for `a=x,b=y`, `a!=x` and `a=x,b!=y`. None for an empty
 * selector (it selects everything).
 */
export function complementSelectors(selector: string): string[] {
  const terms = selector.split(',').filter(Boolean);
  return terms.map((term, i) => {
    const at = term.indexOf('=');
    if (at <= 0 || term[at - 1] === '!' || term[at + 1] === '=') throw new Error(`complementSelectors: "${term}" is not an equality term (key=value)`);
    return [...terms.slice(0, i), `${term.slice(0, at)}!=${term.slice(at + 1)}`].join(',');
  });
}

export interface ForeignNamesOptions extends Pick<InformerOptions, 'log' | 'clock' | 'resyncMs' | 'watchIdleTimeoutMs' | 'initialBackoffMs' | 'maxBackoffMs'> {
  readonly client: Pick<KubeClient, 'request' | 'watch'>;
  /** The owned kinds. */
  readonly kinds: readonly { readonly apiVersion: string; readonly kind: string }[];
  /** What the owned caches select. */
  readonly ownedSelector: string;
  /** Only this namespace; all namespaces when unset. */
  readonly namespace?: string;
  readonly onWatchBytes?: (kind: string, bytes: number) => void;
  readonly onWatchRestart?: (kind: string, reason: string) => void;
}

/** Keeps the name and nothing else: the index answers "does it exist", never "what is in it". */
const nameOnly = (object: CachedObject): CachedObject => ({
  metadata: { name: object.metadata.name, namespace: object.metadata.namespace, resourceVersion: object.metadata.resourceVersion },
});

export class ForeignNames {
  /** By `apiVersion/kind`, as the owned caches are keyed. */
  private readonly byKind = new Map<string, Informer[]>();

  constructor(options: ForeignNamesOptions) {
    const { kinds, ownedSelector, namespace, onWatchBytes, onWatchRestart, ...informerOptions } = options;
    const selectors = complementSelectors(ownedSelector);
    for (const { apiVersion, kind } of kinds) {
      this.byKind.set(`${apiVersion}/${kind}`, selectors.map((labelSelector) => new Informer({
        ...informerOptions,
        apiVersion,
        kind,
        path: resourcePath(apiVersion, kind, namespace),
        labelSelector,
        metadataOnly: true,
        transform: nameOnly,
        onEvent: () => undefined,
        onWatchBytes: (bytes) => onWatchBytes?.(kind, bytes),
        onWatchRestart: (reason) => onWatchRestart?.(kind, reason),
      })));
    }
  }

  get informers(): Informer[] {
    return [...this.byKind.values()].flat();
  }

  /** Names held, by kind (for the cache-size metric). */
  get sizes(): Map<string, number> {
    const sizes = new Map<string, number>();
    for (const informer of this.informers) sizes.set(informer.kind, (sizes.get(informer.kind) ?? 0) + informer.size);
    return sizes;
  }

  /**
   * Whether `object` is known not to exist outside the owned cache: every
   * watch of its kind has listed, is open now (a watch that broke may have
   * missed a creation until it resumes), and none has its name. False for a
   * kind not indexed here: the caller reads.
   */
  provesAbsent(object: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }): boolean {
    const informers = this.byKind.get(`${object.apiVersion}/${object.kind}`);
    if (!informers) return false;
    const key = objectKey(object);
    return informers.every((i) => i.isSynced && i.isWatching && i.get(key) === undefined);
  }
}
