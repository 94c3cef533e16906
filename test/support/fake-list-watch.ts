/**
 * An in-memory list/watch endpoint for unit tests of the informer: lists
 * answer from `objects` (or fail while `listFailures` lasts), and each watch
 * stays open until the test sends events or ends it, as a quiet server
 * would. test/integration covers the same informer against the real API
 * server.
 */
import { KubeApiError, type RequestOptionsExtra, type WatchEvent, type WatchOptions } from '../../kube/client.js';

interface OpenWatch {
  readonly onEvent: (event: WatchEvent) => void;
  readonly options: WatchOptions;
  end: (error?: Error) => void;
}

export class FakeListWatch {
  objects = new Map<string, any>();
  resourceVersion = 1;
  /** Lists that fail before one succeeds. */
  listFailures = 0;
  /** When each list was asked for, by the clock the test passes. */
  readonly listedAt: number[] = [];
  readonly watches: OpenWatch[] = [];

  constructor(private readonly monotonic: () => number) {}

  async request<T = any>(method: string, _path: string, _options: RequestOptionsExtra = {}): Promise<T> {
    if (method !== 'GET') throw new Error(`unexpected ${method}`);
    this.listedAt.push(this.monotonic());
    if (this.listFailures > 0) {
      this.listFailures--;
      throw new KubeApiError(503, 'ServiceUnavailable', 'etcd leader changed', undefined);
    }
    return { items: [...this.objects.values()].map((o) => structuredClone(o)), metadata: { resourceVersion: String(this.resourceVersion) } } as T;
  }

  watch(_path: string, _query: Record<string, unknown>, onEvent: (event: WatchEvent) => void, options: WatchOptions = {}): { done: Promise<void>; abort: () => void } {
    let end: (error?: Error) => void = () => undefined;
    const done = new Promise<void>((resolve, reject) => {
      end = (error) => (error ? reject(error) : resolve());
    });
    const watch: OpenWatch = { onEvent, options, end };
    this.watches.push(watch);
    options.onActivity?.(); // the response's headers: the stream is open
    return { done, abort: () => end() };
  }

  get current(): OpenWatch {
    return this.watches[this.watches.length - 1];
  }

  /** A change the server reports on the open watch. */
  send(type: WatchEvent['type'], object: any): void {
    this.current.options.onActivity?.();
    this.current.onEvent({ type, object });
  }

  put(name: string, data: Record<string, string> = {}): any {
    const object = { metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: String(++this.resourceVersion) }, data };
    this.objects.set(name, object);
    return object;
  }
}
