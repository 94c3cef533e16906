import { realClock, type Clock, type TimerHandle } from './clock.js';
import { KubeApiError, WatchIdleError, type KubeClient, type WatchEvent } from './client.js';
import { silentLogger, type Logger } from './log.js';

/** The minimum every cached object has. */
// Cached objects are open-ended Kubernetes JSON of every owned kind; the code of each kind reads its fields.
/* eslint-disable @typescript-eslint/no-explicit-any */
export interface CachedObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; uid?: string; resourceVersion?: string; [key: string]: any };
  [key: string]: any;
}
/* eslint-enable @typescript-eslint/no-explicit-any */

/** One page of a list. */
interface ListPage {
  readonly metadata: { readonly resourceVersion: string; readonly continue?: string; readonly shardInfo?: { readonly selector: string } };
  readonly items: CachedObject[] | null;
}

export type InformerEventType = 'added' | 'updated' | 'deleted';

export interface InformerOptions {
  /** The two calls an informer makes: list (a request) and watch. */
  readonly client: Pick<KubeClient, 'request' | 'watch'>;
  readonly apiVersion: string;
  readonly kind: string;
  /** The collection path (all namespaces, or one). */
  readonly path: string;
  /** Only objects with these labels are listed, watched and cached. */
  readonly labelSelector?: string;
  /**
   * List and watch only each object's metadata (PartialObjectMetadata, as
   * client-go's metadata informers do): for a cache that needs to know what
   * exists, not what it holds. The server sends a fraction of the bytes.
   */
  readonly metadataOnly?: boolean;
  /** The share this informer holds (sharded controllers); can change with select(). @default everything */
  readonly shard?: InformerShard;
  /** Called for every change the cache sees, and for every object at each resync. */
  readonly onEvent: (type: InformerEventType, object: CachedObject, old?: CachedObject) => void;
  /** Called with the bytes of every chunk a watch receives (for metrics). */
  readonly onWatchBytes?: (bytes: number) => void;
  /** Called when a watch ends abnormally and is restarted (for metrics). */
  readonly onWatchRestart?: (reason: string) => void;
  /** @default silentLogger */
  readonly log?: Logger;
  /** Re-deliver every cached object this often, to catch anything missed. @default 10 minutes */
  readonly resyncMs?: number;
  /** First reconnect delay after a failed list or watch; doubles up to maxBackoffMs. @default 1000 */
  readonly initialBackoffMs?: number;
  /** @default 30000 */
  readonly maxBackoffMs?: number;
  /**
   * A watch on which nothing at all arrives for this long is presumed dead
   * and restarted. The server ends every watch after its timeoutSeconds (240
   * to 360 s here) and sends a bookmark about once a minute, so a live
   * stream is never silent longer than its own timeout.
   * @default the watch's timeoutSeconds plus 30 s
   */
  readonly watchIdleTimeoutMs?: number;
  /**
   * Secondary index: the keys an object is found under with byIndex(). The
   * controller indexes owned objects by their owner's uid, so a reconcile
   * looks up its cluster's objects instead of scanning every cached one.
   */
  readonly indexBy?: (object: CachedObject) => readonly string[];
  /**
   * Applied to every object before it is cached, to keep only what the
   * controller reads (as client-go's SetTransform).
   */
  readonly transform?: (object: CachedObject) => CachedObject;
  /** Time and timers. @default the real clock */
  readonly clock?: Clock;
}

/**
 * A share of the collection: the `shardSelector` sent to the API server
 * (KEP-5866), and the same filter applied here to whatever arrives, so the
 * cache holds the share whether or not the server honours the selector (an
 * older server, or the ShardedListAndWatch feature gate off, ignores it).
 */
export interface InformerShard {
  /** Undefined: nothing (an empty share). */
  readonly selector?: string;
  readonly matches: (object: CachedObject) => boolean;
}

/** What an informer lists and watches; select() changes it. */
export interface InformerSelection {
  readonly labelSelector?: string;
  readonly shard?: InformerShard;
}

/** What a metadata-only informer accepts (kube-apiserver converts any kind to it). */
const METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
const METADATA_WATCH = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';

/** Each watch asks the server to end it after a random time between these (client-go's reflector picks 5 to 10 minutes). */
const MIN_WATCH_TIMEOUT_SECONDS = 240;
const MAX_WATCH_TIMEOUT_SECONDS = 360;

export function objectKey(object: { metadata: { name: string; namespace?: string } }): string {
  return object.metadata.namespace ? `${object.metadata.namespace}/${object.metadata.name}` : object.metadata.name;
}

/**
 * A list-then-watch cache of one kind, as client-go's reflector keeps one:
 * list to get a resourceVersion, watch from it with bookmarks (so a resumed
 * watch starts from a recent version), resume the watch when it ends, relist
 * when the server says the version is too old (410 Gone), and back off on
 * failures. A relist replaces the cache and reports what changed while the
 * watch was down, deletions included.
 */
export class Informer {
  private readonly cache = new Map<string, CachedObject>();
  private readonly index = new Map<string, Set<string>>();
  private resourceVersion = '';
  private stopped = false;
  private synced = false;
  /** A watch stream is open (its response has arrived and it has not ended). */
  private watching = false;
  private syncedWaiters: (() => void)[] = [];
  private abortWatch: () => void = () => undefined;
  private resyncTimer?: TimerHandle;
  private wakeUp?: () => void;
  private loop?: Promise<void>;
  /** When the API server last showed this informer any sign of life (monotonic ms). */
  private lastActivity: number;
  private readonly clock: Clock;
  private selection: InformerSelection;
  /** Bumped by select(); a relist answers the selection of its generation. */
  private selectionGeneration = 0;
  private listedGeneration = -1;
  private needList = true;
  private selectedWaiters: { generation: number; resolve: () => void }[] = [];
  private serverFiltered?: boolean;

  constructor(private readonly options: InformerOptions) {
    this.clock = options.clock ?? realClock;
    this.lastActivity = this.clock.monotonic();
    this.selection = { labelSelector: options.labelSelector, shard: options.shard };
  }

  /**
   * Lists and watches another selection from now on: the watch is ended and
   * the collection relisted, which reports objects that left the selection
   * as deleted and those that entered it as added. Resolves once the cache
   * holds the new selection.
   */
  select(selection: InformerSelection): Promise<void> {
    this.selection = selection;
    const generation = ++this.selectionGeneration;
    this.needList = true;
    this.abortWatch();
    this.wakeUp?.();
    return new Promise((resolve) => {
      if (this.listedGeneration >= generation || this.stopped) resolve();
      else this.selectedWaiters.push({ generation, resolve });
    });
  }

  /**
   * Whether the API server filters by the shard selector: it echoed the
   * selector (shardInfo) or sent nothing outside the share; false once it
   * sent an object outside it (this informer filters then); undefined
   * before a sharded list.
   */
  get shardFilteredByServer(): boolean | undefined {
    return this.serverFiltered;
  }

  start(): void {
    this.lastActivity = this.clock.monotonic();
    this.loop = this.run();
    this.scheduleResync();
  }

  private scheduleResync(): void {
    this.resyncTimer = this.clock.after(this.options.resyncMs ?? 10 * 60_000, () => {
      if (this.stopped) return;
      for (const object of this.cache.values()) this.options.onEvent('updated', object, object);
      this.scheduleResync();
    }).unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.resyncTimer?.cancel();
    this.abortWatch();
    this.wakeUp?.();
    await this.loop;
  }

  /**
   * Whether the informer still hears from the API server: something (a
   * list, a watch's headers, an event, a bookmark) arrived within
   * `watchIdleTimeoutMs` plus the longest reconnect backoff. A watch frozen
   * on a half-open connection is restarted after its idle timeout; if even
   * that cannot reach the server, this turns false and /healthz fails, so
   * the process is restarted rather than leading with a cache that no
   * longer changes.
   */
  liveness(): { readonly live: boolean; readonly silentMs: number; readonly boundMs: number } {
    const silentMs = Math.round(this.clock.monotonic() - this.lastActivity);
    const boundMs = this.idleTimeoutMs(MAX_WATCH_TIMEOUT_SECONDS) + (this.options.maxBackoffMs ?? 30_000);
    const idle = this.selection.shard !== undefined && this.selection.shard.selector === undefined; // an empty share watches nothing
    return { live: this.stopped || idle || silentMs <= boundMs, silentMs, boundMs };
  }

  private idleTimeoutMs(timeoutSeconds: number): number {
    return this.options.watchIdleTimeoutMs ?? timeoutSeconds * 1000 + 30_000;
  }

  /** Whether the first list has filled the cache. */
  get isSynced(): boolean {
    return this.synced;
  }

  /**
   * Whether a watch stream is open now: what the cache lacks was not created
   * while this informer was not listening (between a watch that ended or
   * failed and the next one, the cache may be missing changes).
   */
  get isWatching(): boolean {
    return this.watching;
  }

  /** Resolves once the first list has filled the cache. */
  hasSynced(): Promise<void> {
    return this.synced ? Promise.resolve() : new Promise((resolve) => this.syncedWaiters.push(resolve));
  }

  get(key: string): CachedObject | undefined {
    return this.cache.get(key);
  }

  list(): CachedObject[] {
    return [...this.cache.values()];
  }

  /** Objects whose indexBy() keys include `value`. */
  byIndex(value: string): CachedObject[] {
    return [...(this.index.get(value) ?? [])].map((key) => this.cache.get(key)!).filter(Boolean);
  }

  /** Every cache write goes through here and remove(), so the index never disagrees with the cache. */
  private put(key: string, object: CachedObject): void {
    const old = this.cache.get(key);
    if (old) this.unindex(key, old);
    this.cache.set(key, object);
    for (const value of this.options.indexBy?.(object) ?? []) {
      let keys = this.index.get(value);
      if (!keys) this.index.set(value, (keys = new Set()));
      keys.add(key);
    }
  }

  private remove(key: string): void {
    const old = this.cache.get(key);
    if (old) this.unindex(key, old);
    this.cache.delete(key);
  }

  private unindex(key: string, object: CachedObject): void {
    for (const value of this.options.indexBy?.(object) ?? []) {
      const keys = this.index.get(value);
      keys?.delete(key);
      if (keys?.size === 0) this.index.delete(value);
    }
  }

  /** Whether the share's filter drops any of these (what a server that honours the selector never sends). */
  private dropsAny(items: readonly CachedObject[], shard: InformerShard): boolean {
    return items.some((item) => !shard.matches(item));
  }

  /**
   * Records whether the server filters by the shard selector: it did if it
   * echoed the selector or sent nothing outside it; one object outside it
   * shows it does not (logged when the judgement changes).
   */
  private judgeServerFiltering(byServer: boolean): void {
    if (byServer === this.serverFiltered) return;
    this.serverFiltered = byServer;
    (this.options.log ?? silentLogger).info(byServer ? 'shard: the API server filters by the shard selector' : 'shard: the API server ignores the shard selector: filtering here',
      { kind: this.options.kind, selector: this.selection.shard?.selector });
  }

  private prepare(object: CachedObject): CachedObject {
    object.apiVersion = this.options.apiVersion;
    object.kind = this.options.kind;
    return this.options.transform ? this.options.transform(object) : object;
  }

  get size(): number {
    return this.cache.size;
  }

  /** The kind this informer caches, for messages. */
  get kind(): string {
    return this.options.kind;
  }

  private async sleep(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = this.clock.after(ms, resolve).unref();
      this.wakeUp = () => {
        timer.cancel();
        resolve();
      };
    });
  }

  private async run(): Promise<void> {
    const initial = this.options.initialBackoffMs ?? 1000;
    const max = this.options.maxBackoffMs ?? 30_000;
    let backoff = initial;
    while (!this.stopped) {
      try {
        if (this.needList) {
          this.needList = false;
          await this.relist().catch((e: unknown) => {
            this.needList = true;
            throw e;
          });
        }
        if (this.needList) continue; // select() during the list: list again
        if (this.selection.shard && this.selection.shard.selector === undefined) {
          await this.sleep(24 * 3600_000); // an empty share: nothing to watch until select() wakes this
          continue;
        }
        const ended = await this.watchOnce();
        backoff = initial;
        if (ended === 'gone') {
          this.needList = true;
          this.options.onWatchRestart?.('gone');
        }
      } catch (e) {
        if (this.stopped) break;
        const gone = e instanceof KubeApiError && e.status === 410;
        if (gone) this.needList = true;
        this.options.onWatchRestart?.(gone ? 'gone' : e instanceof WatchIdleError ? 'idle' : 'error');
        (this.options.log ?? silentLogger).warn('watch failed', { kind: this.options.kind, error: String(e), retryInMs: backoff });
        // Jitter keeps many informers from reconnecting in lockstep after an API server restart.
        await this.sleep(backoff * (0.8 + this.clock.random() * 0.4));
        backoff = Math.min(max, backoff * 2);
      }
    }
  }

  private async relist(): Promise<void> {
    const fresh = new Map<string, CachedObject>();
    const generation = this.selectionGeneration;
    const { labelSelector, shard } = this.selection;
    let continueToken: string | undefined;
    let list: ListPage = { metadata: { resourceVersion: '' }, items: [] };
    let serverFiltered: boolean | undefined;
    // An empty share lists nothing: the API server refuses an empty shardSelector, and "everything" would be wrong.
    const listed = !shard || shard.selector !== undefined;
    while (listed) {
      list = await this.options.client.request<ListPage>('GET', this.options.path, {
        query: { labelSelector, shardSelector: shard?.selector, limit: 500, continue: continueToken },
        accept: this.options.metadataOnly ? METADATA_LIST : undefined,
      });
      // Built-in kinds echo the selector in shardInfo; custom resources (1.36) filter without echoing it.
      // A metadata-only list with nothing in it says `"items": null`.
      const items = list.items ?? [];
      if (shard) serverFiltered = (serverFiltered ?? true) && (list.metadata.shardInfo?.selector === shard.selector || !this.dropsAny(items, shard));
      for (const item of items) {
        // An object unchanged since it was cached is kept as it is: a relist of a large cache
        // (after 410 Gone, or a new selection) then holds one copy of it, not two.
        const key = objectKey(item);
        const cached = this.cache.get(key);
        const object = cached && cached.metadata.resourceVersion === item.metadata.resourceVersion ? cached : this.prepare(item);
        if (shard && !shard.matches(object)) continue;
        fresh.set(key, object);
      }
      continueToken = list.metadata?.continue || undefined;
      if (!continueToken) break;
    }
    if (shard && listed) this.judgeServerFiltering(serverFiltered ?? true);
    this.resourceVersion = list.metadata.resourceVersion;
    this.lastActivity = this.clock.monotonic();
    const previous = new Map(this.cache);
    this.cache.clear();
    this.index.clear();
    for (const [key, object] of fresh) {
      this.put(key, object);
      const old = previous.get(key);
      if (!old) this.options.onEvent('added', object);
      else if (old.metadata.resourceVersion !== object.metadata.resourceVersion) this.options.onEvent('updated', object, old);
    }
    for (const [key, old] of previous) if (!fresh.has(key)) this.options.onEvent('deleted', old);
    if (!this.synced) {
      this.synced = true;
      for (const resolve of this.syncedWaiters.splice(0)) resolve();
    }
    this.listedGeneration = generation;
    this.selectedWaiters = this.selectedWaiters.filter((w) => {
      if (w.generation > generation) return true;
      w.resolve();
      return false;
    });
  }

  /** Watches until the stream ends; returns 'gone' when the resourceVersion expired. */
  private async watchOnce(): Promise<'ended' | 'gone'> {
    let gone = false;
    // The server ends the watch after this long; a fresh one also proves the connection is alive.
    const timeoutSeconds = MIN_WATCH_TIMEOUT_SECONDS + Math.floor(this.clock.random() * (MAX_WATCH_TIMEOUT_SECONDS - MIN_WATCH_TIMEOUT_SECONDS));
    const { labelSelector, shard } = this.selection;
    const { done, abort } = this.options.client.watch(this.options.path, {
      labelSelector,
      shardSelector: shard?.selector,
      resourceVersion: this.resourceVersion,
      allowWatchBookmarks: true,
      timeoutSeconds,
    }, (event) => {
      if (this.handle(event) === 'gone') {
        gone = true;
        abort();
      }
    }, {
      idleTimeoutMs: this.idleTimeoutMs(timeoutSeconds),
      onActivity: () => {
        this.lastActivity = this.clock.monotonic();
        this.watching = true;
      },
      onBytes: this.options.onWatchBytes,
      accept: this.options.metadataOnly ? METADATA_WATCH : undefined,
    });
    this.abortWatch = abort;
    if (this.needList) abort(); // select() came while this watch was being opened
    try {
      await done;
    } finally {
      this.watching = false;
    }
    return gone ? 'gone' : 'ended';
  }

  private handle(event: WatchEvent): 'gone' | undefined {
    if (event.type === 'ERROR') {
      const status = event.object as { code?: number; reason?: string; message?: string } | undefined;
      if (status?.code === 410) return 'gone';
      throw new KubeApiError(status?.code ?? 500, status?.reason ?? 'WatchError', status?.message ?? 'watch error', status);
    }
    this.resourceVersion = (event.object as CachedObject | undefined)?.metadata?.resourceVersion ?? this.resourceVersion;
    if (event.type === 'BOOKMARK') return undefined;
    const object = this.prepare(event.object as CachedObject);
    const shard = this.selection.shard;
    if (shard && !shard.matches(object)) {
      if (shard.selector !== undefined) this.judgeServerFiltering(false);
      return undefined;
    }
    const key = objectKey(object);
    const old = this.cache.get(key);
    if (event.type === 'DELETED') {
      this.remove(key);
      this.options.onEvent('deleted', object);
    } else {
      this.put(key, object);
      this.options.onEvent(old ? 'updated' : 'added', object, old);
    }
    return undefined;
  }
}
