import { maxClusterNameLength } from '../model/cluster-identity.js';
import type { GeneratorConfig } from './config.js';
import { CUSTOM_MESSAGE, SYNONYMS } from './schema-errors.js';
import { SCHEMA } from './schema.js';
import { KIND } from './validate.js';
import { API_GROUP, SERVED_VERSIONS, SINCE, STORAGE_VERSION, schemaForVersion, type ServedVersion } from './versions.js';

export const PLURAL = 'distributedkvs';
export const CRD_NAME = `${PLURAL}.${API_GROUP}`;
/** The CRD's own path on the API server (its caBundle and storedVersions are written there). */
export const CRD_PATH = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`;

/** JSON Schema keywords with no place in a CRD's structural schema. */
const DROPPED = new Set(['$schema', '$id', 'title', 'definitions', 'additionalProperties', CUSTOM_MESSAGE, SYNONYMS, SINCE]);

/**
 * JSON Schema → structural OpenAPI v3: `$ref`s inlined, draft-07-only
 * keywords dropped. `additionalProperties: false` has no structural
 * equivalent; the API server prunes unknown fields instead, and rejects them
 * when a client asks for strict field validation (kubectl's default).
 */
function toStructural(schema: Record<string, any>, node: unknown): unknown {
  if (Array.isArray(node)) return node.map((n) => toStructural(schema, n));
  if (typeof node !== 'object' || node === null) return node;
  const obj = node as Record<string, unknown>;
  if (typeof obj.$ref === 'string') {
    const name = obj.$ref.replace('#/definitions/', '');
    return toStructural(schema, schema.definitions[name]);
  }
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(obj)) {
    if (DROPPED.has(key)) continue;
    if (key === 'required' || key === 'enum' || key === 'default' || key === 'x-kubernetes-list-map-keys') {
      out[key] = value;
    } else {
      out[key] = toStructural(schema, value);
    }
  }
  // Maps (labels, annotations) keep their value schema.
  if (typeof obj.additionalProperties === 'object') out.additionalProperties = toStructural(schema, obj.additionalProperties);
  // An integer-or-quantity field carries no type of its own.
  if (obj['x-kubernetes-int-or-string'] === true) delete out.type;
  return out;
}

/** Where the API server sends ConversionReviews: the configured URL, or the controller's webhook Service. */
function conversionClientConfig(config: GeneratorConfig, serviceNamespace: string): Record<string, unknown> {
  const { url, serviceName } = config.conversion;
  if (url) return { url };
  return { service: { namespace: serviceNamespace, name: serviceName, path: '/convert', port: 443 } };
}

/** One entry of spec.versions: its schema derived from the one JSON Schema. */
function versionEntry(version: ServedVersion, maxName: number): Record<string, unknown> {
  const schema = schemaForVersion(SCHEMA, version);
  const properties = schema.properties as Record<string, unknown>;
  return {
    name: version,
    served: true,
    storage: version === STORAGE_VERSION,
    subresources: { status: {} },
    additionalPrinterColumns: [
      { name: 'Size', type: 'integer', jsonPath: '.spec.size' },
      { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas' },
      { name: 'Status', type: 'string', jsonPath: ".status.conditions[?(@.type==\"Available\")].reason" },
      // How close the fullest member is to the NOSPACE alarm (its database against the quota).
      { name: 'Full', type: 'integer', jsonPath: '.status.databaseFullPercent', description: 'The fullest member\'s database against the quota, in percent' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
    schema: {
      openAPIV3Schema: {
        description: schema.description,
        type: 'object',
        required: ['spec'],
        properties: {
          apiVersion: toStructural(schema, properties.apiVersion),
          kind: toStructural(schema, properties.kind),
          metadata: { type: 'object' },
          spec: toStructural(schema, properties.spec),
          status: toStructural(schema, properties.status),
        },
        // Generated object names derive from metadata.name; these are the rules nameProblems() applies.
        'x-kubernetes-validations': [
          { rule: "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')", message: 'metadata.name must be a DNS-1035 label: lower-case letters, digits and \'-\', starting with a letter' },
          { rule: `self.metadata.name.size() <= ${maxName}`, message: `metadata.name must be at most ${maxName} characters: longer names make generated object names exceed Kubernetes limits` },
        ],
      },
    },
  };
}

/**
 * The CustomResourceDefinition for DistributedKV, derived from the JSON
 * Schema and the generator configuration (which decides how long a cluster's
 * name may be, and where the conversion webhook is). Every served version
 * is listed, newest (the storage version) first: kubectl and discovery
 * prefer it. Conversion between them is the controller's webhook
 * (conversion/webhook-server.ts); its caBundle is left out here, for
 * the controller (or cert-manager) writes it and a GitOps tool applying
 * this file must not take it back.
 */
export function customResourceDefinition(config: GeneratorConfig, options: { readonly webhookNamespace?: string } = {}): Record<string, unknown> {
  const maxName = maxClusterNameLength(config);
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: CRD_NAME },
    spec: {
      group: API_GROUP,
      names: { kind: KIND, listKind: `${KIND}List`, plural: PLURAL, singular: 'distributedkv', shortNames: ['dkv'], categories: ['all'] },
      scope: 'Namespaced',
      versions: [...SERVED_VERSIONS].reverse().map((version) => versionEntry(version, maxName)),
      conversion: {
        strategy: 'Webhook',
        webhook: {
          conversionReviewVersions: ['v1'],
          clientConfig: conversionClientConfig(config, options.webhookNamespace ?? config.conversion.serviceNamespace),
        },
      },
    },
  };
}
