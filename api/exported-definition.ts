/**
 * What `dkv export` writes for one DistributedKV: the object as its author
 * wrote it (apiVersion, kind, name, namespace, labels, annotations, spec),
 * without anything the API server set, so that `kubectl apply -f`,
 * `dkv synth --specs` and `dkv import` all take the file as it is. The status
 * travels along as a comment: worth reading after a disaster, but never
 * something to apply (the controller recomputes it).
 */
import { API_VERSION, KIND } from './validate.js';
import { yamlDocument } from '../model/yaml-writer.js';

/**
 * kubectl's copy of the whole object as last applied: a second, stale spec
 * in an annotation, which would follow the object into a new cluster and
 * make kubectl's next three-way merge reason about a history that never
 * happened there.
 */
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

/** A DistributedKV as the API server returns it; only the fields the export reads are typed. */
export interface LiveDistributedKV {
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Record<string, string>;
    readonly annotations?: Record<string, string>;
    readonly [serverSet: string]: unknown;
  };
  readonly spec?: Record<string, unknown>;
  readonly status?: Record<string, unknown>;
}

export interface ExportedDistributedKV {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  readonly spec: Record<string, unknown>;
}

/**
 * The object without server-set metadata. An allow list, not a deny list:
 * a field a future API server adds to metadata (as managedFields once was)
 * stays out of the export without anyone having to know about it.
 */
export function exportedDefinition(live: LiveDistributedKV): ExportedDistributedKV {
  const { name, namespace, labels } = live.metadata;
  const annotations = Object.fromEntries(Object.entries(live.metadata.annotations ?? {}).filter(([key]) => key !== LAST_APPLIED_ANNOTATION));
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: {
      name,
      ...(namespace ? { namespace } : {}),
      ...(labels && Object.keys(labels).length > 0 ? { labels: { ...labels } } : {}),
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
    },
    spec: structuredClone(live.spec ?? {}),
  };
}

/** `<namespace>.<name>.yaml`: names and namespaces hold no dots that could collide (DNS-1123 labels). */
export function exportFileName(definition: { metadata: { name: string; namespace?: string } }): string {
  return `${definition.metadata.namespace ?? 'default'}.${definition.metadata.name}.yaml`;
}

/** Where and when an export was taken: the file's first line. */
export interface ExportOrigin {
  readonly server: string;
  readonly exportedAt: Date;
}

const comment = (text: string): string => text.replace(/\n$/, '').split('\n').map((line) => `#   ${line}`.trimEnd()).join('\n') + '\n';

/**
 * The whole file: a header naming the server and the time, the status as a
 * commented block (commented line by line, so no YAML parser reads it as
 * part of the object), then the object with sorted keys, as every file this
 * toolkit writes.
 */
export function exportText(live: LiveDistributedKV, origin: ExportOrigin): string {
  const header = `# Exported by dkv export from ${origin.server} at ${origin.exportedAt.toISOString()}; apply with dkv import or kubectl apply -f.\n`;
  const status = live.status && Object.keys(live.status).length > 0
    ? `# status at export (for reading only; never applied, the controller recomputes it):\n${comment(yamlDocument(live.status))}`
    : '# status at export: none (no controller had reported on it)\n';
  return header + status + yamlDocument(exportedDefinition(live) as unknown as Record<string, unknown>);
}
