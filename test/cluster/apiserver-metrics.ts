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

/**
 * Seconds kube-apiserver spent, by its own histograms: in one admission
 * plugin (`apiserver_admission_controller_admission_duration_seconds`,
 * e.g. `MutatingAdmissionPolicy`), and serving mutating requests
 * (`apiserver_request_duration_seconds`). Wall time, not CPU: their ratio
 * says what share of the writes' time the plugin took.
 */
export async function admissionSeconds(client: KubeClient, plugin: string): Promise<{ plugin: number; mutatingRequests: number }> {
  const text: string = await client.request('GET', '/metrics');
  let pluginSeconds = 0;
  let requestSeconds = 0;
  for (const line of text.split('\n')) {
    const value = () => Number(line.slice(line.lastIndexOf(' ') + 1));
    if (line.startsWith('apiserver_admission_controller_admission_duration_seconds_sum{') && line.includes(`name="${plugin}"`)) pluginSeconds += value();
    if (line.startsWith('apiserver_request_duration_seconds_sum{') && MUTATING_VERBS.has(/verb="([A-Z]+)"/.exec(line)?.[1] ?? '')) requestSeconds += value();
  }
  return { plugin: pluginSeconds, mutatingRequests: requestSeconds };
}
