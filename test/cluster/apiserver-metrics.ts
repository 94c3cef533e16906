/** Reading kube-apiserver's own request counter, for tests and benchmarks that count writes. */
import type { KubeClient } from '../../kube/client.js';

/** The verb labels of apiserver_request_total that change state. */
export const MUTATING_VERBS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'APPLY', 'DELETE', 'DELETECOLLECTION', 'CREATE', 'UPDATE']);

/** apiserver_request_total summed by `VERB resource[/subresource]` (e.g. `PATCH distributedkvs/status`). */
export async function requestCounts(client: KubeClient): Promise<Map<string, number>> {
  const text: string = await client.request('GET', '/metrics');
  const counts = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const verb = /verb="([A-Z]+)"/.exec(line)?.[1] ?? '?';
    const resource = /resource="([^"]*)"/.exec(line)?.[1] ?? '';
    const sub = /subresource="([^"]*)"/.exec(line)?.[1];
    const key = `${verb} ${resource}${sub ? `/${sub}` : ''}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return counts;
}

/** The verb and resource (without subresource) of a requestCounts key. */
export function splitKey(key: string): { verb: string; resource: string } {
  const [verb, path = ''] = key.split(' ');
  return { verb, resource: path.split('/')[0] };
}
